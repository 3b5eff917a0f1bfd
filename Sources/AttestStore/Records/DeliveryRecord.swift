import AttestCore

/// One event's delivery to one endpoint: the event as it is sent, its state and every attempt.
///
/// Key in `deliveries`: endpoint id (UTF-8) ‖ 0x00 ‖ sequence u64 BE (a store-wide counter in
/// `meta` under "delivery.next"), so one endpoint's log is a key range, oldest first.
/// A pending delivery also has an entry in `delivery_due`: nextAttemptAt i64 BE ‖ its key
/// (empty value), so the sender finds what is due with one range scan. Layout v1:
/// ```
/// u8 1 | eventID string | event string | createdAt i64 | data string (JSON object)
///      | state u8 (0 pending, 1 delivered, 2 failed, 3 skipped) | nextAttemptAt i64 (0 = none)
///      | attempts u8 (n) | n × (at i64 | status u16 (0 = no HTTP answer) | durationMs u32
///                               | error string | excerpt string (≤ 256 bytes of the body))
/// ```
public struct DeliveryRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "delivery"

    /// The endpoint id of a delivery key (endpoint id ‖ 0x00 ‖ sequence u64 BE).
    public static func endpointID(ofKey key: [UInt8]) -> String {
        String(decoding: key.count > 9 ? key[..<(key.count - 9)] : [], as: UTF8.self)
    }

    public enum State: UInt8, Sendable, CaseIterable {
        case pending = 0, delivered, failed, skipped
        public var name: String { String(describing: self) }
    }

    public struct Attempt: Sendable, Hashable {
        public var at: Timestamp
        /// The HTTP status, 0 when there was none (timeout, refused, guard).
        public var status: UInt16
        public var durationMs: UInt32
        public var error: String
        public var excerpt: String

        public init(at: Timestamp, status: UInt16, durationMs: UInt32, error: String, excerpt: String) {
            self.at = at
            self.status = status
            self.durationMs = durationMs
            self.error = error
            self.excerpt = excerpt
        }
    }

    /// Not part of the value: where it is stored.
    public var endpointID = ""
    public var sequence: UInt64 = 0
    public var eventID: String
    public var event: String
    public var createdAt: Timestamp
    public var dataJSON: String
    public var state: State
    public var nextAttemptAt: Timestamp?
    public var attempts: [Attempt]

    /// At most this many attempts are kept (a schedule is shorter).
    public static let maximumAttempts = 32

    public init(endpointID: String, event: OutboxEvent, firstAttemptAt: Timestamp) {
        self.endpointID = endpointID
        eventID = event.id
        self.event = event.event
        createdAt = event.createdAt
        dataJSON = event.dataJSON
        state = .pending
        nextAttemptAt = firstAttemptAt
        attempts = []
    }

    public var key: [UInt8] { Self.key(endpoint: endpointID, sequence: sequence) }

    static func key(endpoint: String, sequence: UInt64) -> [UInt8] {
        Array(endpoint.utf8) + [0] + BigEndian.bytes(sequence)
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(eventID)
        w.string(event)
        w.i64(createdAt.seconds)
        w.string(dataJSON)
        w.u8(state.rawValue)
        w.i64(nextAttemptAt?.seconds ?? 0)
        w.u8(UInt8(min(attempts.count, Self.maximumAttempts)))
        for a in attempts.suffix(Self.maximumAttempts) {
            w.i64(a.at.seconds)
            w.u16(a.status)
            w.u32(a.durationMs)
            w.string(a.error)
            w.string(a.excerpt)
        }
    }

    public init(from r: inout BinaryReader) throws {
        eventID = try r.string()
        event = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        dataJSON = try r.string()
        let raw = try r.u8()
        guard let state = State(rawValue: raw) else { throw StoreError(.corrupt, "delivery state \(raw)") }
        self.state = state
        let next = try r.i64()
        nextAttemptAt = next == 0 ? nil : Timestamp(seconds: next)
        attempts = try (0..<Int(try r.u8())).map { _ in
            Attempt(at: Timestamp(seconds: try r.i64()), status: try r.u16(), durationMs: try r.u32(),
                    error: try r.string(), excerpt: try r.string())
        }
    }

    func restored(key: [UInt8]) -> DeliveryRecord {
        var copy = self
        guard key.count > 9 else { return copy }  // not a delivery key (a damaged index): left as decoded
        let split = key.count - 9
        copy.endpointID = String(decoding: key[..<split], as: UTF8.self)
        copy.sequence = BigEndian.uint64(key[(split + 1)...])
        return copy
    }
}

extension Transaction {
    /// Stores a delivery, giving it a sequence number when it has none, and keeps its
    /// `delivery_due` entry in step with `nextAttemptAt` (`previousDue`: the one to replace).
    @discardableResult
    public func put(_ delivery: DeliveryRecord, previousDue: Timestamp? = nil) throws -> DeliveryRecord {
        var d = delivery
        if d.sequence == 0 {
            let counterKey = Array("delivery.next".utf8)
            d.sequence = (try get(.meta, counterKey).map(BigEndian.uint64) ?? 0) + 1
            try put(.meta, counterKey, BigEndian.bytes(d.sequence))
        }
        if let previousDue { try delete(.deliveryDue, BigEndian.bytes(previousDue.seconds) + d.key) }
        if d.state == .pending, let next = d.nextAttemptAt {
            try put(.deliveryDue, BigEndian.bytes(next.seconds) + d.key, [])
        }
        try put(.deliveries, d.key, d.encoded())
        return d
    }

    public func delivery(endpoint: String, sequence: UInt64) throws -> DeliveryRecord? {
        let key = DeliveryRecord.key(endpoint: endpoint, sequence: sequence)
        return try get(.deliveries, key).map { try DeliveryRecord(encoded: $0).restored(key: key) }
    }

    /// Removes a delivery and its due entry.
    public func delete(_ delivery: DeliveryRecord) throws {
        if delivery.state == .pending, let next = delivery.nextAttemptAt {
            try delete(.deliveryDue, BigEndian.bytes(next.seconds) + delivery.key)
        }
        try delete(.deliveries, delivery.key)
    }

    /// An endpoint's deliveries, newest first, at most `limit`: reads no more than it returns,
    /// however long the log.
    public func deliveries(endpoint: String, newestFirst limit: Int) throws -> [DeliveryRecord] {
        let prefix = Array(endpoint.utf8) + [0]
        var found = [DeliveryRecord]()
        guard limit > 0 else { return [] }
        try scanBackward(.deliveries, before: Array(endpoint.utf8) + [1]) { key, value in
            guard key.count == prefix.count + 8, key.starts(with: prefix) else { return false }
            found.append(try DeliveryRecord(encoded: value).restored(key: key))
            return found.count < limit
        }
        return found
    }

    /// Keys of up to `limit` of an endpoint's finished deliveries (delivered, failed, skipped)
    /// created before `cutoff`, oldest first: the log is in creation order, so the scan stops
    /// at the first one created since. Pending ones stay, whatever their age.
    public func expiredDeliveries(endpoint: String, createdBefore cutoff: Timestamp, limit: Int) throws -> [[UInt8]] {
        let prefix = Array(endpoint.utf8) + [0]
        var found = [[UInt8]]()
        guard limit > 0 else { return [] }
        try scan(.deliveries, from: prefix) { key, value in
            guard key.count == prefix.count + 8, key.starts(with: prefix) else { return false }
            let delivery = try DeliveryRecord(encoded: value)
            guard delivery.createdAt < cutoff else { return false }
            if delivery.state != .pending { found.append(key) }
            return found.count < limit
        }
        return found
    }

    /// One endpoint's deliveries, oldest first.
    public func deliveries(endpoint: String) throws -> [DeliveryRecord] {
        let prefix = Array(endpoint.utf8) + [0]
        var found = [DeliveryRecord]()
        try scan(.deliveries, from: prefix) { key, value in
            guard key.count == prefix.count + 8, key.starts(with: prefix) else { return false }
            found.append(try DeliveryRecord(encoded: value).restored(key: key))
            return true
        }
        return found
    }

    /// What `dueDeliveries` does with a due entry, decided from its delivery key alone.
    public enum DueChoice { case take, pass, stop }

    /// Pending deliveries whose next attempt is at or before `now`, earliest first, from the
    /// `delivery_due` entry `from` on (nil: the first). `choose` sees each entry's delivery key
    /// before its record is read: `take` reads it, `pass` goes on to the next (a key already
    /// being sent, an endpoint at its concurrency), `stop` ends the scan. At most `scanLimit`
    /// entries are looked at. `next` is the entry the scan stopped at (nil: it went through
    /// everything due, or `choose` stopped it).
    public func dueDeliveries(now: Timestamp, from: [UInt8]? = nil, scanLimit: Int = .max,
                              choose: ([UInt8]) throws -> DueChoice) throws
        -> (found: [DeliveryRecord], next: [UInt8]?) {
        var found = [DeliveryRecord]()
        var next: [UInt8]?
        var scanned = 0
        try scan(.deliveryDue, from: from) { key, _ in
            guard key.count > 8, Int64(bitPattern: BigEndian.uint64(key)) <= now.seconds else { return false }
            guard scanned < scanLimit else { next = key; return false }
            scanned += 1
            let deliveryKey = Array(key[8...])
            switch try choose(deliveryKey) {
            case .stop: return false
            case .pass: return true
            case .take:
                if let value = try get(.deliveries, deliveryKey) {
                    found.append(try DeliveryRecord(encoded: value).restored(key: deliveryKey))
                }
                return true
            }
        }
        return (found, next)
    }
}
