import AttestCore

/// An event waiting for webhook delivery, written in the same transaction as the change that
/// caused it, so a crash can neither lose nor invent one.
///
/// Key in `outbox`: sequence u64 BE (1, 2, …: delivery order). Layout v1:
/// ```
/// u8 1 | id string (evt_…, stable across retries) | event string (e.g. usage.limit_reached)
///      | org string | createdAt i64 | data string (a JSON object, snake_case members)
/// ```
public struct OutboxEvent: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "outbox event"

    public var id: String
    public var event: String
    public var org: String
    public var createdAt: Timestamp
    public var dataJSON: String

    public init(id: String, event: String, org: String, createdAt: Timestamp, dataJSON: String) {
        self.id = id
        self.event = event
        self.org = org
        self.createdAt = createdAt
        self.dataJSON = dataJSON
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(id)
        w.string(event)
        w.string(org)
        w.i64(createdAt.seconds)
        w.string(dataJSON)
    }

    public init(from r: inout BinaryReader) throws {
        id = try r.string()
        event = try r.string()
        org = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        dataJSON = try r.string()
    }
}

extension Transaction {
    /// Appends `event` after the last queued one; returns its sequence number.
    @discardableResult
    public func enqueue(_ event: OutboxEvent) throws -> UInt64 {
        let next = (try lastKey(.outbox).map { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } } ?? 0) + 1
        try put(.outbox, (0..<8).reversed().map { UInt8(truncatingIfNeeded: next >> (UInt64($0) * 8)) }, event.encoded())
        return next
    }

    /// Queued events in order, at most `limit`.
    public func outbox(limit: Int = .max) throws -> [(sequence: UInt64, event: OutboxEvent)] {
        var found = [(UInt64, OutboxEvent)]()
        try scan(.outbox) { key, value in
            found.append((key.reduce(0) { $0 << 8 | UInt64($1) }, try OutboxEvent(encoded: value)))
            return found.count < limit
        }
        return found
    }
}
