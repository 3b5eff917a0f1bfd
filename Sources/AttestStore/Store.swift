import AttestCore

/// The store, whatever backend holds it: the one type the endpoints and `attestctl` open.
///
/// `StoreOptions.backend` picks the backend:
/// - `.lmdb` (default): `<directory>/durable` and `<directory>/ephemeral`, embedded, one host.
/// - `.postgres(url:)`: a PostgreSQL-protocol database shared by several hosts
///   (`PostgresStore`); `directory` is then unused.
///
/// Open one `Store` per process (after fork). Transactions are closures; a write closure that
/// throws aborts everything it wrote, and may run more than once (see `Transaction`).
public final class Store {
    public let directory: String
    public let options: StoreOptions
    let backend: any StoreBackend

    /// Opens (creating when absent) the store.
    public init(directory: String, options: StoreOptions = StoreOptions()) throws {
        self.directory = directory
        self.options = options
        switch options.backend {
        case .lmdb:
            backend = try LMDBStore(directory: directory, options: options)
            try checkSchema()
        case .postgres(let url):
            // Checks its schemas at every (re)connection, the first one included.
            backend = try PostgresStore(url: url, options: options)
        }
    }

    /// "lmdb" or "postgres".
    public var kind: String { backend.kind }

    /// PostgreSQL: applies the schema migrations the database lacks and returns their
    /// versions (`attestctl store migrate`); LMDB has none.
    public func migrate() throws -> [Int] { try (backend as? PostgresStore)?.migrate() ?? [] }

    /// PostgreSQL: the database's schema version (0: empty) and the one this build writes.
    public func sqlSchemaVersion() throws -> (database: Int, build: Int)? {
        guard let postgres = backend as? PostgresStore else { return nil }
        return (try postgres.schemaVersion(), PostgresSchema.version)
    }

    /// The layout of the whole store's records, in `meta` under "schema". A store written by a
    /// build with another schema is refused rather than misread. (PostgreSQL's table layout
    /// has its own version: `PostgresSchema`.)
    public static let schemaVersion: UInt8 = 1

    private func checkSchema() throws {
        let key = Array("schema".utf8)
        if let stored = try read({ try $0.get(.meta, key) }) {
            guard stored == [Self.schemaVersion] else {
                throw StoreError(.open, "the store has schema \(stored.first.map(String.init) ?? "?"); "
                                            + "this build reads \(Self.schemaVersion)")
            }
            return
        }
        try write([.durable]) { txn in _ = try txn.put(.meta, key, [Self.schemaVersion], noOverwrite: true) }
    }

    /// Runs `body` in a read-only snapshot. Inside `deferringDurability` the answer waits
    /// until the snapshot is durable, unless `awaitDurable` is false: for reads of what only
    /// a command that waits for its own sync writes (orgs, apps), whose answers change no
    /// state (a challenge).
    public func read<T>(awaitDurable: Bool = true, _ body: (Transaction) throws -> T) throws -> T {
        try backend.read(awaitDurable: awaitDurable, body)
    }

    /// Runs `body` in a write transaction on `environments` (both by default) and commits
    /// when it returns; aborts when it throws.
    public func write<T>(_ environments: Set<Database.Environment> = [.durable, .ephemeral],
                         _ body: (Transaction) throws -> T) throws -> T {
        try backend.write(environments, body)
    }

    /// Whether grouping durable writes pays: pool workers then gather the final writes of the
    /// requests they hold and commit them together (`writeBatch`, group commit). Both backends:
    /// an LMDB commit writes its pages and meta page under the writer lock (and in `commit`
    /// mode syncs them); a PostgreSQL commit waits for a WAL flush.
    public var groupsWrites: Bool { backend.groupsWrites }

    /// Runs each of `writes` as a durable write, rolled back alone when it throws (its error is
    /// returned in its place, `nil` for one that applied). They share one transaction (LMDB:
    /// each in a nested one; PostgreSQL: each after a savepoint) and one commit.
    /// Durable on return, as `write` (inside `deferringDurability`: awaited by the scope). A
    /// write must use only the transaction it is given.
    /// - Throws: when the shared commit fails: then none of them applied.
    public func writeBatch(_ writes: [(Transaction) throws -> Void]) throws -> [(any Error)?] {
        try backend.writeBatch(writes)
    }

    /// Runs `body` (one request: its reads, writes and the building of its answer) and returns
    /// once every durable state it read or wrote is on disk. LMDB in `commit` mode: one
    /// `fdatasync` covers the request's commit and those of concurrent requests in every
    /// process, and the token is signed while other commits proceed (`DurabilityBarrier`).
    /// PostgreSQL: a commit is durable when it returns, so this only runs `body`.
    /// - Throws: `StoreError(.io)` when the sync fails: the caller must not send `body`'s result.
    public func deferringDurability<T>(_ body: () throws -> T) throws -> T {
        let (result, awaits) = try backend.deferringDurabilityUnsettled(body)
        try backend.awaitDurable(awaits)
        return result
    }

    /// `deferringDurability` without the wait, for a worker that answers later: runs `body`
    /// and returns its result with the durable position its answer awaits (0: none, as with
    /// PostgreSQL and LMDB's `interval` mode). The answer must not leave before
    /// `isDurable(awaits)` is true or `awaitDurable(awaits)` returned. Meanwhile the worker
    /// may serve other requests: a later commit by any process usually covers `awaits`
    /// (its data sync starts after our meta page was written), so held answers rarely need a
    /// sync of their own.
    public func deferringDurabilityUnsettled<T>(_ body: () throws -> T) throws -> (result: T, awaits: Int) {
        try backend.deferringDurabilityUnsettled(body)
    }

    /// Whether durable position `position` is on disk already; never waits.
    public func isDurable(_ position: Int) -> Bool { backend.isDurable(position) }

    /// Returns once durable position `position` is on disk (one `fdatasync` at most).
    /// - Throws: `StoreError(.io)` when the sync fails: the answers awaiting it must not leave.
    public func awaitDurable(_ position: Int) throws { try backend.awaitDurable(position) }

    /// `fdatasync`s this process made for answers in `commit` mode (tests, benchmarks).
    public var durabilitySyncs: Int { backend.durabilitySyncs }

    /// Unix second at which this store forgot its used challenges and rate windows: LMDB
    /// recreates its ephemeral environment, which commits without syncing, when it is first
    /// opened after the machine restarted (a power cut may have left it corrupt; see
    /// `EphemeralReset`). 0: never (always with PostgreSQL). Challenges issued before it
    /// are refused.
    public var ephemeralResetAt: Int64 { backend.ephemeralResetAt }

    /// What to tell the operator when this open recreated the ephemeral environment (the
    /// first open after the machine restarted), else `nil`.
    public var ephemeralResetNotice: String? {
        guard let lmdb = backend as? LMDBStore, lmdb.resetEphemeralOnOpen else { return nil }
        return "the ephemeral store (used challenges, rate windows) was recreated after a restart: "
            + "challenges issued before \(Timestamp(seconds: lmdb.ephemeralResetAt).iso8601) are refused as expired"
    }

    /// Entry counts of every database, for `attestctl` and tests.
    public func entryCounts() throws -> [Database: Int] {
        try read { txn in
            var counts = [Database: Int]()
            for db in Database.allCases { counts[db] = try txn.count(db) }
            return counts
        }
    }

    /// Map size and bytes in use of each LMDB environment (how close a `full` error is), and
    /// whether it writes through its reserved map (`LMDBEnvironment`); empty for PostgreSQL.
    public func usage() -> [(environment: Database.Environment, mapSize: Int, used: Int, throughMap: Bool)] {
        backend.usage()
    }

    /// Changes whenever orgs, apps or the tenancy generation may have changed: callers cache
    /// those reads against it. LMDB: any commit of any process; PostgreSQL: every second, and
    /// at this process's own writes of them.
    public var durableVersion: Int { backend.durableVersion }

    /// LMDB only: writes a compacted, consistent copy of `environment` into `directory` as
    /// `data.mdb` while the store keeps serving. PostgreSQL is backed up with its own tools.
    public func copyCompacted(_ environment: Database.Environment, to directory: String) throws {
        guard let lmdb = backend as? LMDBStore else {
            throw StoreError(.open, "the store is in PostgreSQL: back it up with pg_dump "
                                        + "(attestctl backup copies an LMDB store)")
        }
        try lmdb.copyCompacted(environment, to: directory)
    }
}
