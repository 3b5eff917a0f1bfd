import AttestCore
import AttestStore
import CLISupport

/// `attestctl store stats`: entry counts per database and how full each environment is.
/// `attestctl store check`: the consistency check of every database (`Store.check()`).
let storeCommand = Command(
    name: "store",
    summary: "show entry counts and map usage, or check every database's consistency",
    usage: """
        usage: attestctl store stats [--json] [--data DIR]
               attestctl store check [--json] [--data DIR]

        Both read a consistent snapshot while the pools run. A map near full answers 503 soon:
        raise store.durableMapSizeMiB / store.ephemeralMapSizeMiB and restart.
        check: every record decodes, indexes agree with what they index, counts match;
        exit 0 when consistent, 1 when not (each problem is listed) or unreadable.

        example: attestctl store check --data /var/lib/attestedge
        """,
    run: { argv in
        let (verb, rest) = try subcommand(argv, ["stats", "check"])
        let args = try Arguments(rest, valued: ["data"], switches: ["json"])
        let (_, store) = try openStore(dataDirectory(args))
        return verb == "check" ? try storeCheck(store, json: args.flag("json")) : try storeStats(store, json: args.flag("json"))
    })

func storeStats(_ store: Store, json: Bool) throws -> Int32 {
    let counts = try store.entryCounts()
    let usage = store.usage()
    if json {
        Output.out(JSONValue.object([
            ("databases", .object(Database.allCases.map { ($0.rawValue, .int(Int64(counts[$0] ?? 0))) })),
            ("environments", .object(usage.map { ($0.environment.rawValue, ["mapSize": .int(Int64($0.mapSize)), "used": .int(Int64($0.used))]) })),
        ]).prettyJSONText)
    } else {
        Output.out(Output.table(["DATABASE", "ENVIRONMENT", "ENTRIES"], Database.allCases.map {
            [$0.rawValue, $0.environment.rawValue, String(counts[$0] ?? 0)]
        }))
        Output.out("")
        Output.out(Output.table(["ENVIRONMENT", "USED", "MAP SIZE", "FULL"], usage.map {
            [$0.environment.rawValue, mib($0.used), mib($0.mapSize), "\(($0.used * 1000 / max(1, $0.mapSize) + 5) / 10)%"]
        }))
    }
    return 0
}

func mib(_ bytes: Int) -> String {
    let tenths = (bytes * 10 + (1 << 19)) >> 20
    return "\(tenths / 10).\(tenths % 10) MiB"
}
