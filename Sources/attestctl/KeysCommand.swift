import AttestCore
import AttestService
import CLISupport

/// `attestctl keys rotate|list`.
let keysCommand = Command(
    name: "keys",
    summary: "rotate and list token signing keys (the JWKS keeps the previous key for the overlap)",
    usage: """
        usage: attestctl keys rotate [--algorithm ES256|RS256] [--overlap SECONDS] [--data DIR]
               attestctl keys list [--json] [--data DIR]

        rotate makes a new active key; the previous one stays in jwks.json for --overlap seconds
        (default tokens.rotationOverlapSeconds) so tokens it signed keep verifying. Running
        workers pick the new key up within a second.
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["rotate", "list"])
        let args = try Arguments(rest, valued: ["data", "algorithm", "overlap"], switches: ["json"])
        let data = dataDirectory(args)
        let config = try data.loadConfiguration()
        let ring = try KeyRing(directory: data.keysDirectory)
        let time = now()
        if sub == "rotate" {
            let algorithm = args.value("algorithm") ?? config.tokenAlgorithm
            guard algorithm == "ES256" || algorithm == "RS256" else { throw UsageError("--algorithm must be ES256 or RS256") }
            let overlap = try args.int("overlap", default: config.rotationOverlapSeconds, in: 0...31_536_000)
            let entry = try ring.rotate(algorithm: algorithm, now: time, overlapSeconds: Int64(overlap), jwksPath: data.jwksFile)
            Output.out("new active key \(entry.kid) (\(entry.algorithm)); previous keys stay in the JWKS for \(overlap)s")
            return 0
        }
        let published = Set(ring.publishedEntries(now: time).map(\.kid))
        if args.flag("json") {
            Output.out(JSONValue.array(ring.entries.map { e in
                ["kid": .string(e.kid), "algorithm": .string(e.algorithm), "createdAt": .string(e.createdAt.iso8601),
                 "retiresAt": e.retiresAt.map { .string($0.iso8601) } ?? .null, "active": .bool(e.retiresAt == nil),
                 "published": .bool(published.contains(e.kid))]
            }).prettyJSONText)
        } else {
            Output.out(Output.table(["KID", "ALG", "CREATED", "STATE"], ring.entries.map { e in
                [e.kid, e.algorithm, e.createdAt.iso8601,
                 e.retiresAt == nil ? "active" : published.contains(e.kid) ? "retiring \(e.retiresAt!.iso8601)" : "retired"]
            }))
        }
        return 0
    })
