/// What a store backend provides. The endpoints and `attestctl` see only `Store` and
/// `Transaction`; those forward here.
///
/// The contract is an ordered map of byte keys to byte values per `Database`, compared as
/// unsigned bytes (a shorter key sorts before its extensions), with transactions. Every typed
/// operation (devices, usage, outbox, webhooks, …) is written once, in `Transaction`'s
/// extensions, on top of these few calls: a change to the store's records lands in every
/// backend at once, and one conformance suite (`StoreConformance` in the tests) holds each
/// backend to the same behaviour.
///
/// Isolation: a write transaction behaves as if it ran alone (LMDB: one writer at a time;
/// PostgreSQL: `SERIALIZABLE`, retried on serialization failures). One exception, kept for
/// the hot path: a write on the ephemeral databases alone (`challenges`, `rates`) may run
/// with weaker isolation, so it uses only the two operations that are atomic on their own:
/// `put(noOverwrite: true)` and `increment`.
public protocol StoreTransaction: AnyObject {
    func get(_ db: Database, _ key: [UInt8]) throws -> [UInt8]?
    /// A hint that `get(db, key)` follows: PostgreSQL sends the read with the next statement
    /// (one round trip for several reads); LMDB, whose reads are memory, ignores it.
    func prefetch(_ db: Database, _ key: [UInt8])
    var prefetches: Bool { get }
    /// `false` when `noOverwrite` and the key exists (nothing written).
    func put(_ db: Database, _ key: [UInt8], _ value: [UInt8], noOverwrite: Bool) throws -> Bool
    func delete(_ db: Database, _ key: [UInt8]) throws -> Bool
    /// Visits entries in key order from the first key ≥ `start` until `visit` returns `false`.
    func scan(_ db: Database, from start: [UInt8]?, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws
    /// Visits entries in descending key order from the last key < `bound` until `visit`
    /// returns `false`.
    func scanBackward(_ db: Database, before bound: [UInt8], _ visit: ([UInt8], [UInt8]) throws -> Bool) throws
    func lastKey(_ db: Database) throws -> [UInt8]?
    func count(_ db: Database) throws -> Int
    /// Deletes up to `limit` of the first entries whose key sorts before `bound` (bytewise);
    /// how many. Reads nothing at or after `bound`, so under PostgreSQL's serializable
    /// isolation it does not conflict with writers of those keys.
    func deleteBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws -> Int
    /// `deleteBelow` for a caller that does not need the count: PostgreSQL queues it with the
    /// next statement instead of spending a round trip on it.
    func sweepBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws
    /// Adds one to the u32 big-endian counter under `key` (absent: 0) and returns the new
    /// value, atomically even under the ephemeral writes' weaker isolation.
    func increment(_ db: Database, _ key: [UInt8]) throws -> UInt32
    /// `increment` when nothing needs the new value: PostgreSQL queues it to go out with the
    /// next statement (no round trip of its own); by default (LMDB) it adds at once.
    func addOne(_ db: Database, _ key: [UInt8]) throws
    /// Stores `value` under `db`'s next sequence number (an 8-byte big-endian key above every
    /// key this backend numbered before). Only the outbox is numbered this way. Numbers are
    /// unique; concurrent transactions need not commit in their order (PostgreSQL), and a
    /// rolled-back one leaves a gap there.
    func append(_ db: Database, _ value: [UInt8]) throws
    /// `put(noOverwrite: true)` whose outcome is asked for later: PostgreSQL queues the insert
    /// to go out with the next statement, and the closure answers from its result (sending the
    /// queue first if nothing went out since); LMDB inserts at once.
    func insertLater(_ db: Database, _ key: [UInt8], _ value: [UInt8]) throws -> () throws -> Bool
}

/// A backend: opens transactions and owns whatever makes an answer durable.
public protocol StoreBackend: AnyObject {
    /// "lmdb" or "postgres", for `attestctl store stats` and `doctor`.
    var kind: String { get }
    func read<T>(awaitDurable: Bool, _ body: (Transaction) throws -> T) throws -> T
    func write<T>(_ environments: Set<Database.Environment>, _ body: (Transaction) throws -> T) throws -> T
    /// Whether sharing one commit between writes (`writeBatch`) saves work per write (a sync, page writes).
    var groupsWrites: Bool { get }
    /// Durable writes, each rolled back alone when it throws (its error returned in its place).
    func writeBatch(_ writes: [(Transaction) throws -> Void]) throws -> [(any Error)?]
    /// Runs one request without waiting; returns its result and the durable position its
    /// answer awaits (0: nothing to wait for).
    func deferringDurabilityUnsettled<T>(_ body: () throws -> T) throws -> (result: T, awaits: Int)
    /// Whether `position` is durable already (no waiting).
    func isDurable(_ position: Int) -> Bool
    /// Returns once `position` is durable; throws when making it so failed.
    func awaitDurable(_ position: Int) throws
    var durabilitySyncs: Int { get }
    /// Unix second at which the used challenges and rate windows were forgotten (LMDB's
    /// ephemeral environment recreated after the machine restarted); 0: never.
    var ephemeralResetAt: Int64 { get }
    /// Map size and bytes used per environment, and whether its commits store through the
    /// memory map; empty for a backend without a map.
    func usage() -> [(environment: Database.Environment, mapSize: Int, used: Int, throughMap: Bool)]
    /// Changes whenever orgs, apps or the tenancy generation may have changed (more often is
    /// allowed: callers then re-read).
    var durableVersion: Int { get }
}

extension StoreTransaction {
    /// `insertLater` as an insert now.
    func insertNow(_ db: Database, _ key: [UInt8], _ value: [UInt8]) throws -> () throws -> Bool {
        let inserted = try put(db, key, value, noOverwrite: true)
        return { inserted }
    }

    /// `append` as the last key + 1: exact where one writer runs at a time.
    func appendAfterLastKey(_ db: Database, _ value: [UInt8]) throws {
        let next = (try lastKey(db).map(BigEndian.uint64) ?? 0) + 1
        _ = try put(db, BigEndian.bytes(next), value, noOverwrite: false)
    }

    func addOne(_ db: Database, _ key: [UInt8]) throws { _ = try increment(db, key) }

    /// `increment` as a read and a write: exact wherever the transaction is serializable.
    func incrementByReadAndWrite(_ db: Database, _ key: [UInt8]) throws -> UInt32 {
        let value = (try get(db, key).flatMap(BigEndian.uint32) ?? 0) &+ 1
        _ = try put(db, key, BigEndian.bytes(value), noOverwrite: false)
        return value
    }
}
