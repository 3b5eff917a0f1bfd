import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import CLISupport

/// `attestctl keys rotate|list`.
let keysCommand = Command(
    name: "keys",
    summary: "rotate and list token signing keys (published before they sign, withdrawn after an overlap)",
    usage: """
        usage: attestctl keys rotate [--algorithm ES256|RS256] [--overlap SECONDS] [--now] [--data DIR]
               attestctl keys list [--json] [--data DIR]

        rotate publishes a new key in jwks.json at once; it starts signing tokens
        tokens.publicationDelaySeconds later (default 600), when every cached copy of the JWKS
        (nginx serves it with max-age=300) has it. The key signing until then retires at that
        moment: its private key is deleted and it stays in jwks.json for --overlap seconds
        (default tokens.rotationOverlapSeconds, or the longest token lifetime in use if that
        is longer) so the tokens it signed keep verifying until they expire.
        --now makes the new key sign at once: for emergencies (a leaked key, with --overlap 0
        to withdraw it too); relying parties reject the new tokens until their JWKS cache expires.

        list shows each key's state now: pending (in jwks.json, not signing yet), active
        (signing), retired (in jwks.json, private key deleted), withdrawn (out of jwks.json).
        Running workers apply these transitions within a second of their first request; rotate
        and list apply them too.

        example: attestctl keys rotate --algorithm ES256    (then attestctl keys list: pending, active, retired)
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["rotate", "list"])
        let args = try Arguments(rest, valued: ["data", "algorithm", "overlap"], switches: ["json", "now"])
        let data = dataDirectory(args)
        let config = try data.loadConfiguration()
        let ring = try KeyRing(data)
        let time = now()
        if sub == "rotate" {
            let algorithm = args.value("algorithm") ?? config.tokenAlgorithm.rawValue
            guard algorithm == "ES256" || algorithm == "RS256" else {
                throw UsageError("--algorithm must be ES256 or RS256")
            }
            // A token signed just before the rotation stays valid for its lifetime: its key must
            // stay in the JWKS at least that long, or relying parties reject it before its exp.
            let (_, store) = try openStore(data)
            let longest = config.longestTokenLifetime(apps: try store.read { try $0.apps() })
            let overlap = try args.int("overlap", default: max(config.rotationOverlapSeconds, longest),
                                       in: 0...31_536_000)
            if overlap < longest {
                Output.err("""
                    WARNING: --overlap \(overlap) is shorter than the longest token lifetime in use (\(longest) s): \
                    tokens the current key signed just before it retires stop verifying before they expire. \
                    Shorten it only to withdraw a compromised key.
                    """)
            }
            let delay = args.flag("now") ? 0 : config.publicationDelaySeconds
            let entry = try ring.rotate(algorithm: algorithm, now: time, publicationDelay: Int64(delay),
                                        overlap: Int64(overlap))
            if entry.activateAt == time {
                if args.flag("now") && ring.entries.count > 1 {
                    Output.err("""
                        WARNING: --now: key \(entry.kid) signs tokens from now on, but relying parties that fetched \
                        jwks.json in the last 300 s (its max-age) do not know it yet and will reject those tokens \
                        until their cache expires.
                        """)
                }
                Output.out("new key \(entry.kid) (\(entry.algorithm)) published and active now; "
                           + "previous keys stay in jwks.json for \(overlap)s")
            } else {
                Output.out("new key \(entry.kid) (\(entry.algorithm)) published in jwks.json now; "
                           + "it signs from \(entry.activateAt.iso8601) "
                           + "(in \(delay)s); the current key stays in jwks.json for \(overlap)s after that")
            }
            return 0
        }
        try ring.publish(now: time)
        if args.flag("json") {
            Output.out(ring.listing(at: time).prettyJSONText)
        } else {
            Output.out(Output.table(["KID", "ALG", "STATE", "PUBLISH", "ACTIVATE", "RETIRE", "WITHDRAW"],
                                    ring.listingRows(at: time)))
        }
        return 0
    })
