import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import CLISupport

/// `attestctl init`: create a data directory (config, secrets, signing key, store).
let initCommand = Command(
    name: "init",
    summary: "create a data directory: config, challenge secret, signing key (0600), store",
    usage: """
        usage: attestctl init [--data DIR] [--test-ca]

        Creates whatever is missing in DIR (default $ATTEST_EDGE_DATA or ./var): config.json with
        every default, secrets/challenge.key, an ES256 token signing key in keys/ (mode 0600), the
        JWKS and the LMDB store. Existing files are kept, so running it again is safe.

        --test-ca   also create a test CA in DIR/test-ca for attest-device and trust it
                    (trust.testRoots): for tests and demos, never in production

        example: attestctl init --data /var/lib/attestedge    (add --test-ca on a test box only)
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data"], switches: ["test-ca"])
        let data = dataDirectory(args)
        let created = try initialiseDataDirectory(data)
        Output.out(created.isEmpty ? "\(data.path) is already initialised" : "initialised \(data.path):")
        for path in created { Output.out("  created \(path)") }
        if args.flag("test-ca") { try ensureTestCA(data) }
        return 0
    })

/// Initialises `data` and opens its store once so both LMDB environments exist.
/// Returns what was created.
func initialiseDataDirectory(_ data: DataDirectory) throws -> [String] {
    let created = try data.initialise(now: now())
    _ = try openStore(data)
    return created
}
