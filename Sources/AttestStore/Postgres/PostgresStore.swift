#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL-protocol backend (`store.backend: "postgres"`): the store's databases as
/// `ae_*` tables (`PostgresSchema`) in one database shared by every host, through one libpq
/// connection per process.
///
/// How each kind of transaction runs:
/// - `write` on the ephemeral databases alone (the rate-limit charge and the challenge's
///   single use, before any signature work): `READ COMMITTED`. It uses only atomic
///   operations: a challenge is consumed by `INSERT … ON CONFLICT DO NOTHING` (of two hosts
///   presenting one challenge, exactly one inserts), a rate window by one upsert that adds 1.
///   Rate windows are therefore shared: a limit holds for the whole deployment, not per host.
///   Its `COMMIT` does not wait for the WAL flush (`synchronous_commit` off for it alone): it is
///   visible to every host at once, and the request's final write, committed durably after it,
///   flushes it too (the WAL is one sequence). A database crash can forget only the last
///   fraction of a second of these, and only for requests that committed nothing after (they
///   failed, or were never answered): such a request's challenge can then be used once more,
///   and its effect (an enrollment, a counter advance) still happens at most once, because
///   none happened. That saves a WAL flush on every validate and refresh.
/// - every other `write`: `SERIALIZABLE`. Counters advance only upward, a month admits
///   exactly its limit, and one outbox event becomes one delivery, whatever the number of
///   hosts, because the database aborts whichever of two conflicting transactions would
///   break serial order; the loser runs again (up to `StoreOptions.maxRetries` times, after a
///   random pause that grows with each attempt, `retryPause`).
/// - A write that keeps losing runs alone: every serializable write first locks the empty
///   table `ae_write_gate` in `ROW EXCLUSIVE` mode (shared: writers do not wait for each
///   other), and a run that follows `StoreOptions.exclusiveAfterConflicts` lost conflicts, or
///   is the last run allowed, locks it in `EXCLUSIVE` mode instead. That waits for the
///   serializable writers in flight on every host to end and holds new ones off until it
///   commits; the lock is taken before the transaction's first query, so its snapshot is
///   taken after they ended and there is no writer left to conflict with. Read-only and
///   `READ COMMITTED` transactions do not take the gate: they are not part of serializable
///   conflicts, and those writes touch only the ephemeral tables, which serializable writes
///   only read. So a request no longer fails with 503 because others kept winning (4 workers
///   validating new devices of one organization all update its month record: on a slow box
///   a validate could lose every one of its runs).
/// - `read`: `REPEATABLE READ READ ONLY`, one consistent snapshot, like an LMDB read.
///
/// A worker's final writes are grouped (`writeBatch`: one transaction, one WAL flush). A
/// durable write's answer is durable once `COMMIT` returns (the server's
/// `synchronous_commit`), so `deferringDurability` waits for nothing more. While the
/// database is unreachable every call fails fast with `StoreError(.io)` and the connection
/// is retried with backoff (`PGConnection`).
final class PostgresStore: StoreBackend {
    var kind: String { "postgres" }
    let connection: PGConnection
    let options: StoreOptions
    private var open = false
    private(set) var writes = 0
    /// Those of `writes` that wrote an org, an app or `meta` (`durableVersion`).
    private var tenancyWrites = 0

    /// Prepares the connection; connects on first use, so a service starts (answering 503)
    /// while the database is down.
    init(url: String, options: StoreOptions) throws {
        connection = PGConnection(url: url)
        self.options = options
        connection.onConnect = { connection in
            let current = try PostgresSchema.currentVersion(connection)
            if current == 0 {
                try PostgresSchema.migrate(connection)
            } else if current != PostgresSchema.version {
                throw StoreError(.open, current < PostgresSchema.version
                    ? "the database has schema version \(current); this build needs \(PostgresSchema.version): "
                        + "run 'attestctl store migrate'"
                    : "the database has schema version \(current); this build knows \(PostgresSchema.version): "
                        + "upgrade attestctl")
            }
            // The records' layout, as `Store` checks it in LMDB (one statement each, autocommit).
            let meta = PostgresTransaction(connection), key = Array("schema".utf8)
            _ = try meta.put(.meta, key, [Store.schemaVersion], noOverwrite: true)
            guard let stored = try meta.get(.meta, key), stored == [Store.schemaVersion] else {
                throw StoreError(.open, "the database holds a store of another record schema; "
                                            + "this build reads \(Store.schemaVersion)")
            }
        }
    }

    /// Applies pending migrations (`attestctl store migrate`); the versions applied.
    func migrate() throws -> [Int] {
        try withoutSchemaCheck { try PostgresSchema.migrate(connection) }
    }

    /// The schema version of the database (0: none yet).
    func schemaVersion() throws -> Int {
        try withoutSchemaCheck { try PostgresSchema.currentVersion(connection) }
    }

    /// Connects without the schema check (which refuses an outdated schema) and runs `body`.
    private func withoutSchemaCheck<T>(_ body: () throws -> T) throws -> T {
        let hook = connection.onConnect
        connection.onConnect = nil
        defer { connection.onConnect = hook }
        try connection.ensure()
        return try body()
    }

    func read<T>(awaitDurable: Bool, _ body: (Transaction) throws -> T) throws -> T {
        try run({ _ in ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"] }, writable: [], body)
    }

    func write<T>(_ environments: Set<Database.Environment>, _ body: (Transaction) throws -> T) throws -> T {
        if environments == [.ephemeral] {
            return try run({ _ in ["BEGIN ISOLATION LEVEL READ COMMITTED", "SET LOCAL synchronous_commit TO OFF"] },
                           writable: environments, body)
        }
        // The gate's lock is the transaction's first statement, before any query takes its
        // snapshot (both go out with the first query: `PGConnection.begin`).
        let options = options
        return try run({ attempt in
            ["BEGIN ISOLATION LEVEL SERIALIZABLE", "LOCK TABLE \(PostgresSchema.writeGate) IN "
                + (Self.runsAlone(attempt: attempt, options: options) ? "EXCLUSIVE MODE" : "ROW EXCLUSIVE MODE")]
        }, writable: environments, body)
    }

    /// Whether run `attempt` of a serializable write runs alone: after `exclusiveAfterConflicts`
    /// lost conflicts, and on the last run `maxRetries` allows once one conflict was lost.
    static func runsAlone(attempt: Int, options: StoreOptions) -> Bool {
        attempt > 1 && (attempt > options.exclusiveAfterConflicts || attempt == options.maxRetries + 1)
    }

    /// Runs `body` in a transaction opened by `begin(attempt)`, again after each lost conflict.
    private func run<T>(_ begin: (Int) -> [String], writable: Set<Database.Environment>,
                        _ body: (Transaction) throws -> T) throws -> T {
        precondition(!open, "a store transaction opened inside another on the same connection")
        var attempt = 0
        while true {
            attempt += 1
            let txn = PostgresTransaction(connection)
            do {
                try connection.ensure()
                connection.begin(begin(attempt))
                open = true
                defer { open = false }
                let result: T
                do {
                    result = try body(Transaction(txn, writable: writable))
                } catch {
                    // A database failure the closure turned into its own error is still that failure.
                    throw txn.failure ?? error
                }
                if let failure = txn.failure { throw failure }
                try connection.commit()
                if !writable.isEmpty { writes &+= 1 }
                if txn.wroteTenancy { tenancyWrites &+= 1 }
                return result
            } catch let failure as PGConnection.Failure where failure.isRetryable && attempt <= options.maxRetries {
                connection.rollback()
                usleep(Self.retryPause(attempt: attempt))
            } catch let failure as PGConnection.Failure {
                connection.rollback()
                throw failure.isRetryable
                    ? StoreError(.busy, "gave up after \(attempt) serialization conflicts: \(failure)")
                    : StoreError(.io, "database: \(failure)")
            } catch {
                connection.rollback()
                throw error
            }
        }
    }

    /// The pause before run `attempt + 1` of a transaction that lost a conflict, µs: random
    /// in [0, 0.5 ms × 2^attempt), the ceiling capped at 32 ms ("full jitter"). Conflicting
    /// writers (new devices of one organization and month all update its month record) last a
    /// few milliseconds under load; pauses shorter than that, as the earlier 0.2–1 ms × attempt
    /// were, set them up to collide again (4 workers: 1.5 rollbacks per validate, and now and
    /// then a 503 after the last retry).
    static func retryPause(attempt: Int) -> UInt32 {
        let ceiling = 500 << min(max(attempt, 1), 6)
        return UInt32.random(in: 0..<UInt32(ceiling))
    }

    func deferringDurabilityUnsettled<T>(_ body: () throws -> T) throws -> (result: T, awaits: Int) { (try body(), 0) }

    func isDurable(_ position: Int) -> Bool { true }

    func awaitDurable(_ position: Int) throws {}

    var durabilitySyncs: Int { 0 }

    /// Used challenges live in the shared database and are not forgotten as a whole (see the
    /// type's comment for what a database crash can forget).
    var ephemeralResetAt: Int64 { 0 }

    /// A worker's final writes share one serializable transaction and one durable commit
    /// (`writeBatch`): one WAL flush for the group instead of one each.
    var groupsWrites: Bool { true }

    /// The writes in one serializable transaction, each between a savepoint and its release
    /// (`PostgresTransaction.step`, queued: no round trip of their own) and rolled back to it
    /// alone when it throws; one `COMMIT`, durable on return. A serialization conflict runs the
    /// whole group again (each write's closure then runs again, as any write's does); any
    /// other database failure fails the group (its answers are 503s).
    func writeBatch(_ writes: [(Transaction) throws -> Void]) throws -> [(any Error)?] {
        guard !writes.isEmpty else { return [] }
        return try write([.durable]) { batch in
            guard let engine = batch.engine as? PostgresTransaction else {
                throw StoreError(.io, "a grouped write outside a PostgreSQL transaction")
            }
            return try writes.map { write in try engine.step { try write(batch) } }
        }
    }

    func usage() -> [(environment: Database.Environment, mapSize: Int, used: Int, throughMap: Bool)] { [] }

    /// Another host may write at any moment and nothing tells this one cheaply, so the version
    /// is the monotonic second plus this process's own writes of orgs, apps and `meta` (the
    /// tenancy generation): what this process wrote there is seen at once, what another host or
    /// `attestctl` wrote within a second (an app disabled, an org's limit changed). Callers cache
    /// the app lookup against it (`appContext`). Counting every write, as before, made each
    /// refresh revalidate the app for the next request: a read transaction, 2 round trips.
    var durableVersion: Int {
        let second = monotonicNanoseconds() / 1_000_000_000
        return second << 24 | tenancyWrites & 0xFF_FFFF
    }
}
