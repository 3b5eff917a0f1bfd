import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport

/// The PostgreSQL database `--url` names, else the configuration's `store.postgres.url`.
func postgresURL(_ config: Configuration, _ url: String?) throws -> String {
    if let url, !url.isEmpty { return url }
    guard !config.postgresURL.isEmpty else {
        throw CommandFailure(.failed, "no database: pass --url, or "
                                 + "'attestctl config set store.postgres.url \"host=… dbname=… user=…\"'")
    }
    return config.postgresURL
}

/// `attestctl store migrate`: applies pending migrations and says where the schema stands.
func storeMigrate(_ data: DataDirectory, url: String?) throws -> Int32 {
    var config = try data.loadConfiguration()
    guard url != nil || config.storeBackend == .postgres else {
        throw CommandFailure(.failed, "store.backend is \"\(config.storeBackend.rawValue)\": "
                                 + "LMDB has no schema to migrate (pass --url to migrate a PostgreSQL database)")
    }
    config.postgresURL = try postgresURL(config, url)
    var options = config.storeOptions
    options.backend = .postgres(url: config.postgresURL)
    let store = try Store(directory: data.storeDirectory, options: options)
    let applied = try store.migrate()
    let version = try store.sqlSchemaVersion()
    Output.out(applied.isEmpty ? "schema is up to date (version \(version?.database ?? 0))"
                               : "applied migration \(applied.map(String.init).joined(separator: ", ")); "
                                   + "schema version \(version?.database ?? 0)")
    return 0
}

/// `attestctl store copy --to postgres`: every database of the LMDB store, read in one
/// snapshot, written in transactions of `batch` entries. Prints progress per database.
func storeCopy(_ data: DataDirectory, to target: String?, url: String?, replace: Bool) throws -> Int32 {
    guard target == "postgres" else { throw UsageError("--to postgres is the one destination") }
    let config = try data.loadConfiguration()
    guard config.storeBackend == .lmdb else {
        throw CommandFailure(.already,
                             "this data directory's store is already in PostgreSQL (store.backend is postgres)")
    }
    let source = try Store(directory: data.storeDirectory, options: config.storeOptions)
    var options = config.storeOptions
    options.backend = .postgres(url: try postgresURL(config, url))
    let destination = try Store(directory: data.storeDirectory, options: options)
    let present = try destination.entryCounts().filter { $0.key != .meta && $0.value > 0 }
    if !present.isEmpty {
        guard replace else {
            throw CommandFailure(.already, "the database already holds a store "
                                     + "(\(present.values.reduce(0, +)) entries in \(present.count) tables): "
                                     + "pass --replace to empty it first")
        }
        for db in Database.allCases { try empty(db, in: destination) }
    }
    let batch = 1000
    var total = 0
    try source.read { txn in
        for db in Database.allCases {
            let expected = try txn.count(db)
            var pending = [([UInt8], [UInt8])](), copied = 0
            func flush() throws {
                guard !pending.isEmpty else { return }
                // Outbox events take the database's own numbers (its sequence), in the same order.
                try destination.write { out in
                    for (k, v) in pending { if db == .outbox { try out.append(db, v) } else { try out.put(db, k, v) } }
                }
                copied += pending.count
                pending.removeAll(keepingCapacity: true)
                if copied % 50_000 < batch { Output.err("  \(db.rawValue): \(copied)/\(expected)") }
            }
            try txn.scan(db) { key, value in
                pending.append((key, value))
                if pending.count == batch { try flush() }
                return true
            }
            try flush()
            Output.out("\(Output.pad(db.rawValue, 16)) \(copied) entries")
            total += copied
        }
    }
    let report = try destination.check()
    Output.out("copied \(total) entries; the copy \(report.isConsistent ? "passes" : "FAILS") the consistency check")
    guard report.isConsistent else { return 1 }
    Output.out("next: stop serving, run this again with --replace, then 'attestctl config set store.backend postgres' "
               + "and 'attestctl config set store.postgres.url …', and start")
    return 0
}

/// Deletes every entry of `db` (in `meta`, all but the schema marker), a thousand a transaction.
private func empty(_ db: Database, in store: Store) throws {
    let schemaKey = Array("schema".utf8)
    while true {
        let removed = try store.write { txn -> Int in
            var keys = [[UInt8]]()
            try txn.scan(db) { key, _ in
                if db != .meta || key != schemaKey { keys.append(key) }
                return keys.count < 1000
            }
            for key in keys { try txn.delete(db, key) }
            return keys.count
        }
        if removed == 0 { return }
    }
}
