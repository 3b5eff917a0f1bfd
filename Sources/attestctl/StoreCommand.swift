import AttestCore
import AttestStore
import CLISupport

/// `attestctl store stats`: entry counts per database and how full each environment is.
/// `attestctl store check`: the consistency check of every database (`Store.check()`).
/// `attestctl store migrate`: the PostgreSQL schema's pending migrations.
/// `attestctl store copy --to postgres`: the LMDB store into PostgreSQL (`StoreCopy.swift`).
let storeCommand = Command(
    name: "store",
    summary: "show entry counts and map usage, check consistency, migrate or copy to PostgreSQL",
    usage: """
        usage: attestctl store stats [--json] [--data DIR]
               attestctl store check [--json] [--data DIR]
               attestctl store migrate [--url URL] [--data DIR]
               attestctl store copy --to postgres [--url URL] [--replace] [--data DIR]

        stats and check read a consistent snapshot while the pools run. A map near full answers
        503 soon: raise store.durableMapSizeMiB / store.ephemeralMapSizeMiB and restart.
        WRITES says how this process's commits reach each environment's file: through the
        memory map, which is then reserved on disk (the ephemeral environment on ext4, XFS
        and tmpfs), or with pwrite.
        check: every record decodes, indexes agree with what they index, counts match;
        exit 0 when consistent, 1 when not (each problem is listed) or unreadable.
        migrate: applies the PostgreSQL schema migrations the database lacks (store.postgres.url,
        or --url); a fresh database is also migrated when first opened.
        copy: copies every database of this data directory's LMDB store, from one snapshot, into
        the PostgreSQL database (--url, else store.postgres.url), which must hold no store yet
        (--replace empties it first). Moving a host: copy while serving (a rehearsal), stop
        serving, copy --replace (nothing written after it is lost), then
        'attestctl config set store.backend postgres' and start again.

        example: attestctl store copy --to postgres --url 'host=db1 dbname=attestedge user=attestedge'
        """,
    run: { argv in
        let (verb, rest) = try subcommand(argv, ["stats", "check", "migrate", "copy"])
        let args = try Arguments(rest, valued: ["data", "url", "to"], switches: ["json", "replace"])
        let data = dataDirectory(args)
        switch verb {
        case "migrate": return try storeMigrate(data, url: args.value("url"))
        case "copy":
            return try storeCopy(data, to: args.value("to"), url: args.value("url"), replace: args.flag("replace"))
        default:
            let (_, store) = try openStore(data)
            return verb == "check" ? try storeCheck(store, json: args.flag("json"))
                                   : try storeStats(store, json: args.flag("json"))
        }
    })

func storeStats(_ store: Store, json: Bool) throws -> Int32 {
    let counts = try store.entryCounts()
    let usage = store.usage()
    if json {
        Output.out(JSONValue.object([
            ("databases", .object(Database.allCases.map { ($0.rawValue, .int(Int64(counts[$0] ?? 0))) })),
            ("environments", .object(usage.map {
                ($0.environment.rawValue, ["mapSize": .int(Int64($0.mapSize)), "used": .int(Int64($0.used)),
                                           "writesThroughMap": .bool($0.throughMap)])
            })),
        ]).prettyJSONText)
    } else {
        if store.kind == "postgres" {
            Output.out("backend: postgres ("
                       + ((try? store.sqlSchemaVersion()).flatMap { $0 }.map { "schema version \($0.database)" } ?? "?")
                       + ")\n")
        }
        Output.out(Output.table(["DATABASE", "ENVIRONMENT", "ENTRIES"], Database.allCases.map {
            [$0.rawValue, $0.environment.rawValue, String(counts[$0] ?? 0)]
        }))
        guard !usage.isEmpty else { return 0 }
        Output.out("")
        Output.out(Output.table(["ENVIRONMENT", "USED", "MAP SIZE", "FULL", "WRITES"], usage.map {
            [$0.environment.rawValue, mib($0.used), mib($0.mapSize),
             "\(($0.used * 1000 / max(1, $0.mapSize) + 5) / 10)%",
             $0.throughMap ? "through the map (reserved on disk)" : "pwrite"]
        }))
    }
    return 0
}

func mib(_ bytes: Int) -> String {
    let tenths = (bytes * 10 + (1 << 19)) >> 20
    return "\(tenths / 10).\(tenths % 10) MiB"
}
