/// One open SQL transaction behind a `Transaction` (see `PostgresStore` for how it begins
/// and ends). Each call is one statement on `ae_<database>`.
///
/// The first statement that fails poisons the transaction: PostgreSQL refuses everything
/// after it, and a caller that swallowed the error (`try?`) must not turn a serialization
/// failure into a silent rollback. `PostgresStore` checks `failure` before committing.
///
/// `prefetch` queues a key's `SELECT`; the next statement that goes out takes it along, and
/// `get` of that key then answers from its result without a round trip of its own. A write to
/// the key in between drops the prefetched result (it was read before the write).
final class PostgresTransaction: StoreTransaction {
    let connection: PGConnection
    private(set) var failure: (any Error)?
    private struct Slot: Hashable {
        let db: Database
        let key: [UInt8]
    }
    /// Prefetched keys and their `PGConnection` tickets.
    private var prefetched: [Slot: Int] = [:]
    /// Whether this transaction wrote an org, an app or the tenancy generation (`meta`): what
    /// the workers' app lookups are cached against (`PostgresStore.durableVersion`).
    private(set) var wroteTenancy = false
    /// Whether every statement reads the same snapshot (REPEATABLE READ, SERIALIZABLE): then a
    /// database's last key, once read, changes only through this transaction's own writes.
    private let oneSnapshot: Bool
    private struct LastKey { let key: [UInt8]? }
    /// Last keys read (`lastKey`) and kept up to date through this transaction's puts; a
    /// delete or sweep in the database, or a rolled-back step, forgets them. The outbox's
    /// events each read it: a validate queues two, a group of them many.
    private var lastKeys: [Database: LastKey] = [:]

    init(_ connection: PGConnection, oneSnapshot: Bool = false) {
        self.connection = connection
        self.oneSnapshot = oneSnapshot
    }

    /// The statements of one table, built once.
    struct Statements {
        let get, insert, upsert, delete, scanFrom, scanAfter, last, count, sweep, bump: String

        init(_ table: String) {
            get = "SELECT v FROM \(table) WHERE k = $1"
            insert = "INSERT INTO \(table) (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING"
            upsert = "INSERT INTO \(table) (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
            delete = "DELETE FROM \(table) WHERE k = $1"
            scanFrom = "SELECT k, v FROM \(table) WHERE k >= $1 ORDER BY k LIMIT \(PostgresTransaction.page)"
            scanAfter = "SELECT k, v FROM \(table) WHERE k > $1 ORDER BY k LIMIT \(PostgresTransaction.page)"
            last = "SELECT k FROM \(table) ORDER BY k DESC LIMIT 1"
            count = "SELECT count(*) FROM \(table)"
            sweep = "DELETE FROM \(table) WHERE k IN (SELECT k FROM \(table) WHERE k < $1 ORDER BY k LIMIT $2)"
            // v + 1 as a u32, big-endian, wrapping; a value of another length counts as 0.
            let plusOne = "substring(int8send(((get_byte(r.v, 0)::INT8 << 24) | (get_byte(r.v, 1)::INT8 << 16)"
                + " | (get_byte(r.v, 2)::INT8 << 8) | get_byte(r.v, 3)::INT8) + 1) FROM 5 FOR 4)"
            bump = "INSERT INTO \(table) AS r (k, v) VALUES ($1, '\\x00000001'::BYTEA) ON CONFLICT (k) DO UPDATE"
                + " SET v = CASE WHEN length(r.v) = 4 THEN \(plusOne) ELSE '\\x00000001'::BYTEA END RETURNING v"
        }
    }

    /// Rows a scan fetches per statement.
    static let page = 256
    static let statements: [Database: Statements] =
        Dictionary(uniqueKeysWithValues: Database.allCases.map { ($0, Statements(PostgresSchema.table($0))) })

    private func run(_ db: Database, _ sql: KeyPath<Statements, String>, _ parameters: [PGConnection.Parameter]) throws -> PGResult {
        try recording { try connection.run(Self.statements[db]![keyPath: sql], parameters) }
    }

    /// `body`, unless the transaction already failed; its failure poisons the transaction.
    private func recording<T>(_ body: () throws -> T) throws -> T {
        if let failure { throw failure }
        do {
            return try body()
        } catch {
            failure = error
            throw error
        }
    }

    func get(_ db: Database, _ key: [UInt8]) throws -> [UInt8]? {
        let result: PGResult
        if !prefetched.isEmpty, let ticket = prefetched.removeValue(forKey: Slot(db: db, key: key)) {
            result = try recording { try connection.result(ticket) }
        } else {
            result = try run(db, \.get, [.bytes(key)])
        }
        return result.rows == 0 ? nil : result.bytes(0, 0)
    }

    var prefetches: Bool { true }

    /// Queues the `SELECT` of `key` to go out with the next statement. A failure to queue it
    /// (the connection is gone) is left for the next statement to meet.
    func prefetch(_ db: Database, _ key: [UInt8]) {
        let slot = Slot(db: db, key: key)
        guard failure == nil, prefetched[slot] == nil,
              let ticket = try? connection.enqueueQuery(Self.statements[db]!.get, [.bytes(key)]) else { return }
        prefetched[slot] = ticket
    }

    /// A write to `key` (nil: to any key of `db`) makes its prefetched result stale. `added`:
    /// the write can only add `key` (a put, an increment), so the last key is the greater one.
    private func written(_ db: Database, _ key: [UInt8]?, added: Bool = false) {
        if db == .orgs || db == .apps || db == .meta { wroteTenancy = true }
        if let known = lastKeys[db] {
            if added, let key {
                if known.key.map({ $0.lexicographicallyPrecedes(key) }) ?? true { lastKeys[db] = LastKey(key: key) }
            } else {
                lastKeys[db] = nil
            }
        }
        guard !prefetched.isEmpty else { return }
        if let key { prefetched[Slot(db: db, key: key)] = nil } else { prefetched = prefetched.filter { $0.key.db != db } }
    }

    /// Runs `body` as one step of a group (`PostgresStore.writeBatch`): between a savepoint and
    /// its release (both queued), rolled back to the savepoint alone when it throws its own
    /// error. A database failure is not the step's own: it is rethrown, and fails the group.
    func step(_ body: () throws -> Void) throws -> (any Error)? {
        if let failure { throw failure }
        connection.enqueue(command: "SAVEPOINT step")
        do {
            try body()
        } catch where failure == nil {
            // A prefetched result or a last key may hold what the rollback undoes.
            prefetched = [:]
            lastKeys = [:]
            connection.enqueue(command: "ROLLBACK TO SAVEPOINT step")
            connection.enqueue(command: "RELEASE SAVEPOINT step")
            return error
        }
        if let failure { throw failure }
        connection.enqueue(command: "RELEASE SAVEPOINT step")
        return nil
    }

    /// An upsert waits for no answer: it goes out with the next statement (`PGConnection.enqueue`).
    func put(_ db: Database, _ key: [UInt8], _ value: [UInt8], noOverwrite: Bool) throws -> Bool {
        written(db, key, added: true)
        guard noOverwrite else {
            try recording { try connection.enqueue(Self.statements[db]!.upsert, [.bytes(key), .bytes(value)]) }
            return true
        }
        return try run(db, \.insert, [.bytes(key), .bytes(value)]).affected == 1
    }

    func delete(_ db: Database, _ key: [UInt8]) throws -> Bool {
        written(db, key)
        return try run(db, \.delete, [.bytes(key)]).affected == 1
    }

    func scan(_ db: Database, from start: [UInt8]?, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        var result = try run(db, \.scanFrom, [.bytes(start ?? [])])
        while true {
            let rows = result.rows
            for row in 0..<rows {
                guard try visit(result.bytes(row, 0), result.bytes(row, 1)) else { return }
            }
            guard rows == Self.page else { return }
            result = try run(db, \.scanAfter, [.bytes(result.bytes(rows - 1, 0))])
        }
    }

    func lastKey(_ db: Database) throws -> [UInt8]? {
        if failure == nil, let known = lastKeys[db] { return known.key }
        let result = try run(db, \.last, [])
        let key = result.rows == 0 ? nil : result.bytes(0, 0)
        if oneSnapshot { lastKeys[db] = LastKey(key: key) }
        return key
    }

    func count(_ db: Database) throws -> Int { Int(try run(db, \.count, []).int64(0, 0)) }

    func deleteBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws -> Int {
        written(db, nil)
        return try run(db, \.sweep, [.bytes(bound), .text(String(limit))]).affected
    }

    /// Queued, as an upsert is: its failure surfaces with the statement it goes out with.
    func sweepBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws {
        written(db, nil)
        try recording { try connection.enqueue(Self.statements[db]!.sweep, [.bytes(bound), .text(String(limit))]) }
    }

    /// One atomic upsert that returns the new value: under `READ COMMITTED` it waits for a
    /// concurrent writer of the row and adds to what that one committed; under `SERIALIZABLE`
    /// such a conflict is a serialization failure and the transaction runs again.
    func increment(_ db: Database, _ key: [UInt8]) throws -> UInt32 {
        written(db, key, added: true)
        let result = try run(db, \.bump, [.bytes(key)])
        guard result.rows == 1, let value = BigEndian.uint32(result.bytes(0, 0)) else {
            throw StoreError(.io, "database: incrementing \(db) returned no 4-byte value")
        }
        return value
    }
}
