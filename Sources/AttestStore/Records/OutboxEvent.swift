import AttestCore

/// An event waiting for webhook delivery, written in the same transaction as the change that
/// caused it, so a crash can neither lose nor invent one.
///
/// Key in `outbox`: sequence u64 BE (`Transaction.append`: queue order; PostgreSQL numbers from
/// `ae_outbox_seq`, which may commit out of order or skip). Layout v2 (v1 lacks `target`):
/// ```
/// u8 2 | id string (evt_…, stable across retries) | event string (e.g. usage.limit_reached)
///      | org string | createdAt i64 | data string (a JSON object, snake_case members)
///      | target string (one endpoint id for webhook.test; empty = every subscribed endpoint)
/// ```
/// The delivery worker replaces an entry, in one transaction, by one pending `DeliveryRecord`
/// per endpoint it goes to (`Transaction.fanOut`).
public struct OutboxEvent: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 2
    public static let recordName = "outbox event"

    public var id: String
    public var event: String
    public var org: String
    public var createdAt: Timestamp
    public var dataJSON: String
    /// The only endpoint this event goes to (`webhook.test`); empty for all subscribed ones.
    public var target: String

    public init(id: String, event: String, org: String, createdAt: Timestamp, dataJSON: String, target: String = "") {
        self.id = id
        self.event = event
        self.org = org
        self.createdAt = createdAt
        self.dataJSON = dataJSON
        self.target = target
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(id)
        w.string(event)
        w.string(org)
        w.i64(createdAt.seconds)
        w.string(dataJSON)
        w.string(target)
    }

    public init(from r: inout BinaryReader) throws {
        id = try r.string()
        event = try r.string()
        org = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        dataJSON = try r.string()
        target = r.version >= 2 ? try r.string() : ""
    }
}

extension Transaction {
    /// Queues `event` under the outbox's next sequence number (`append`). The delivery worker
    /// takes events from the first key each time, so one that commits after a higher number
    /// (PostgreSQL, concurrent transactions) is still taken, on its next pass.
    public func enqueue(_ event: OutboxEvent) throws {
        try append(.outbox, event.encoded())
    }

    /// Queued events in order, at most `limit`.
    public func outbox(limit: Int = .max) throws -> [(sequence: UInt64, event: OutboxEvent)] {
        var found = [(UInt64, OutboxEvent)]()
        guard limit > 0 else { return [] }
        try scan(.outbox) { key, value in
            found.append((BigEndian.uint64(key), try OutboxEvent(encoded: value)))
            return found.count < limit
        }
        return found
    }

    /// Removes a queued event (after its deliveries are recorded).
    public func dequeue(_ sequence: UInt64) throws {
        try delete(.outbox, BigEndian.bytes(sequence))
    }
}

/// Big-endian u64 keys, so that LMDB's byte order is numeric order.
public enum BigEndian {
    public static func bytes(_ v: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> (UInt64($0) * 8)) }
    }
    public static func bytes(_ v: Int64) -> [UInt8] { bytes(UInt64(bitPattern: v)) }
    public static func bytes(_ v: UInt32) -> [UInt8] {
        (0..<4).reversed().map { UInt8(truncatingIfNeeded: v >> (UInt32($0) * 8)) }
    }
    /// A 4-byte big-endian counter; `nil` for any other length.
    public static func uint32(_ b: [UInt8]) -> UInt32? { b.count == 4 ? b.reduce(0) { $0 << 8 | UInt32($1) } : nil }
    public static func uint64<C: Collection>(_ b: C) -> UInt64 where C.Element == UInt8 {
        b.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
