/// A transaction over the store's databases, handed to `Store.read` and `Store.write`
/// closures, whatever the backend. The typed operations (`device(keyID:)`, `put(_:)`, usage,
/// outbox, …) are extensions built on these calls, so every backend runs the same code.
///
/// A write closure may run more than once: a backend that detects a conflict with a
/// concurrent transaction (PostgreSQL's serialization failures) rolls back and runs it again.
/// Closures therefore only compute their result from the transaction, and keep side effects
/// (sending, signing, appending to outer state) for after `write` returns.
public final class Transaction {
    let engine: any StoreTransaction
    /// The environments this transaction may write (empty: a read).
    let writable: Set<Database.Environment>

    /// How many ways `spread` splits a counter that many concurrent transactions bump.
    public static let spreadWays = 16

    /// A number below `spreadWays` drawn once per transaction object, so once per run of a
    /// write closure (a run after a lost conflict draws again). Counters that every
    /// transaction would otherwise bump at the same moment (`countReturningDevice`) are split
    /// over that many keys, so that concurrent writers on PostgreSQL rarely touch the same row.
    public private(set) lazy var spread = UInt8.random(in: 0..<UInt8(Self.spreadWays))

    init(_ engine: any StoreTransaction, writable: Set<Database.Environment>) {
        self.engine = engine
        self.writable = writable
    }

    private func mayWrite(_ db: Database) {
        precondition(writable.contains(db.environment),
                     "write to \(db.rawValue) in a transaction that only reads \(db.environment.rawValue)")
    }

    /// The value stored under `key`, copied out; `nil` when absent.
    public func get(_ db: Database, _ key: [UInt8]) throws -> [UInt8]? { try engine.get(db, key) }

    /// Says that `get(db, key)` will follow in this transaction: on PostgreSQL the read then
    /// goes out with the next statement, so several prefetched reads cost one round trip;
    /// on LMDB it does nothing. Only a hint: what `get` returns is the same either way.
    public func prefetch(_ db: Database, _ key: [UInt8]) { engine.prefetch(db, key) }

    /// Whether `prefetch` does anything here: callers skip working out the keys when not.
    public var prefetches: Bool { engine.prefetches }

    /// Stores `value` under `key`. With `noOverwrite`, an existing key is left alone and the
    /// result is `false` (atomic in every backend: of two racing writers exactly one wins).
    @discardableResult
    public func put(_ db: Database, _ key: [UInt8], _ value: [UInt8], noOverwrite: Bool = false) throws -> Bool {
        mayWrite(db)
        return try engine.put(db, key, value, noOverwrite: noOverwrite)
    }

    /// `put(noOverwrite: true)` whose outcome the returned closure tells, later: on PostgreSQL
    /// the insert goes out with the transaction's next statement instead of on its own.
    public func insertLater(_ db: Database, _ key: [UInt8], _ value: [UInt8]) throws -> () throws -> Bool {
        mayWrite(db)
        return try engine.insertLater(db, key, value)
    }

    /// Removes `key`; `false` when it was not there.
    @discardableResult
    public func delete(_ db: Database, _ key: [UInt8]) throws -> Bool {
        mayWrite(db)
        return try engine.delete(db, key)
    }

    /// Visits entries in key order from the first key ≥ `start` (or the first key), copies of
    /// key and value each time, until `visit` returns `false` or the database ends. `visit`
    /// may write to the database it scans.
    public func scan(_ db: Database, from start: [UInt8]? = nil, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        try engine.scan(db, from: start, visit)
    }

    /// Visits entries in descending key order from the last key < `bound`, copies of key and
    /// value each time, until `visit` returns `false` or the database's start. `visit` must
    /// not write to the database it scans.
    public func scanBackward(_ db: Database, before bound: [UInt8], _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        try engine.scanBackward(db, before: bound, visit)
    }

    /// The greatest key in `db`, or `nil` when it is empty.
    public func lastKey(_ db: Database) throws -> [UInt8]? { try engine.lastKey(db) }

    /// Entries in `db`.
    public func count(_ db: Database) throws -> Int { try engine.count(db) }

    /// Deletes up to `limit` entries of an expiry-keyed database (`challenges`, `rates`: the
    /// key starts with an 8-byte big-endian expiry in seconds) whose expiry is before `now`.
    /// Returns how many were removed. Called a few at a time inside ordinary write
    /// transactions, so no separate cleaner process is needed.
    @discardableResult
    public func sweepExpired(_ db: Database, now: Int64, limit: Int) throws -> Int {
        mayWrite(db)
        return try engine.deleteBelow(db, BigEndian.bytes(now), limit: limit)
    }

    /// Stores `value` under `db`'s next sequence number (`StoreTransaction.append`: the outbox).
    public func append(_ db: Database, _ value: [UInt8]) throws {
        mayWrite(db)
        try engine.append(db, value)
    }

    /// `deleteBelow` without the count (PostgreSQL: no round trip of its own).
    func sweepBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws {
        mayWrite(db)
        try engine.sweepBelow(db, bound, limit: limit)
    }

    /// Deletes up to `limit` of the first entries of `db` whose key sorts before `bound`
    /// (bytewise); how many. For databases keyed by a big-endian period first.
    @discardableResult
    public func deleteBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws -> Int {
        mayWrite(db)
        return try engine.deleteBelow(db, bound, limit: limit)
    }

    /// Adds one to the u32 big-endian counter under `key` (atomic), telling nothing back: on
    /// PostgreSQL it goes out with the next statement.
    public func addOne(_ db: Database, _ key: [UInt8]) throws {
        mayWrite(db)
        try engine.addOne(db, key)
    }

    /// Adds one to the u32 big-endian counter under `key` and returns it (atomic).
    public func increment(_ db: Database, _ key: [UInt8]) throws -> UInt32 {
        mayWrite(db)
        return try engine.increment(db, key)
    }
}
