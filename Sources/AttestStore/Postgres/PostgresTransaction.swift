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

    init(_ connection: PGConnection) { self.connection = connection }

    /// The statements of one table, built once.
    struct Statements {
        let get, insert, upsert, delete, scanFrom, scanAfter, scanBefore, last, count, sweep, bump: String

        init(_ table: String) {
            get = "SELECT v FROM \(table) WHERE k = $1"
            insert = "INSERT INTO \(table) (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING"
            upsert = "INSERT INTO \(table) (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
            delete = "DELETE FROM \(table) WHERE k = $1"
            scanFrom = "SELECT k, v FROM \(table) WHERE k >= $1 ORDER BY k LIMIT \(PostgresTransaction.page)"
            scanAfter = "SELECT k, v FROM \(table) WHERE k > $1 ORDER BY k LIMIT \(PostgresTransaction.page)"
            scanBefore = "SELECT k, v FROM \(table) WHERE k < $1 ORDER BY k DESC LIMIT \(PostgresTransaction.page)"
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

    private func run(_ db: Database, _ sql: KeyPath<Statements, String>,
                     _ parameters: [PGConnection.Parameter]) throws -> PGResult {
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

    /// A write to `key` (nil: to any key of `db`) makes its prefetched result stale.
    private func written(_ db: Database, _ key: [UInt8]?) {
        if db == .orgs || db == .apps || db == .meta { wroteTenancy = true }
        guard !prefetched.isEmpty else { return }
        if let key {
            prefetched[Slot(db: db, key: key)] = nil
        } else {
            prefetched = prefetched.filter { $0.key.db != db }
        }
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
            // A prefetched result may hold what the rollback undoes.
            prefetched = [:]
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
        written(db, key)
        guard noOverwrite else {
            try recording { try connection.enqueue(Self.statements[db]!.upsert, [.bytes(key), .bytes(value)]) }
            return true
        }
        return try run(db, \.insert, [.bytes(key), .bytes(value)]).affected == 1
    }

    /// The insert goes out with the next statement; the closure reads its row count.
    func insertLater(_ db: Database, _ key: [UInt8], _ value: [UInt8]) throws -> () throws -> Bool {
        written(db, key)
        let ticket = try recording {
            try connection.enqueueQuery(Self.statements[db]!.insert, [.bytes(key), .bytes(value)])
        }
        return { [self] in try recording { try connection.result(ticket) }.affected == 1 }
    }

    func delete(_ db: Database, _ key: [UInt8]) throws -> Bool {
        written(db, key)
        return try run(db, \.delete, [.bytes(key)]).affected == 1
    }

    func scan(_ db: Database, from start: [UInt8]?, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        try pages(db, first: \.scanFrom, from: start ?? [], next: \.scanAfter, visit)
    }

    func scanBackward(_ db: Database, before bound: [UInt8], _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        try pages(db, first: \.scanBefore, from: bound, next: \.scanBefore, visit)
    }

    /// Runs `first` with `key`, then `next` with each full page's last key, visiting the rows
    /// in the order the statements return them until `visit` says stop or a page is short.
    private func pages(_ db: Database, first: KeyPath<Statements, String>, from key: [UInt8],
                       next: KeyPath<Statements, String>, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        var result = try run(db, first, [.bytes(key)])
        while true {
            let rows = result.rows
            for row in 0..<rows {
                guard try visit(result.bytes(row, 0), result.bytes(row, 1)) else { return }
            }
            guard rows == Self.page else { return }
            result = try run(db, next, [.bytes(result.bytes(rows - 1, 0))])
        }
    }

    func lastKey(_ db: Database) throws -> [UInt8]? {
        let result = try run(db, \.last, [])
        return result.rows == 0 ? nil : result.bytes(0, 0)
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

    /// The number comes from the table's sequence (`PostgresSchema`), not from its last key:
    /// nothing is read, so concurrent appenders do not conflict, and the insert is queued.
    func append(_ db: Database, _ value: [UInt8]) throws {
        guard let sql = Self.appends[db] else {
            throw StoreError(.io, "database: \(db) has no sequence to append with")
        }
        written(db, nil)
        try recording { try connection.enqueue(sql, [.bytes(value)]) }
    }

    /// The insert under the next number, for each database with a sequence.
    static let appends: [Database: String] = Dictionary(uniqueKeysWithValues: PostgresSchema.sequenced.map { db in
        let table = PostgresSchema.table(db)
        return (db, "INSERT INTO \(table) (k, v) VALUES (int8send(nextval('\(PostgresSchema.sequence(db))')), $1)")
    })

    /// The same upsert, queued: its value is not read, and a failure (a serialization
    /// conflict) surfaces with the statement it goes out with.
    func addOne(_ db: Database, _ key: [UInt8]) throws {
        written(db, key)
        try recording { try connection.enqueue(Self.statements[db]!.bump, [.bytes(key)]) }
    }

    /// One atomic upsert that returns the new value: under `READ COMMITTED` it waits for a
    /// concurrent writer of the row and adds to what that one committed; under `SERIALIZABLE`
    /// such a conflict is a serialization failure and the transaction runs again.
    func increment(_ db: Database, _ key: [UInt8]) throws -> UInt32 {
        written(db, key)
        let result = try run(db, \.bump, [.bytes(key)])
        guard result.rows == 1, let value = BigEndian.uint32(result.bytes(0, 0)) else {
            throw StoreError(.io, "database: incrementing \(db) returned no 4-byte value")
        }
        return value
    }
}
