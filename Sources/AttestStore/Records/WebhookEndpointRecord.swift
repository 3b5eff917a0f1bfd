import AttestCore

/// An organization's webhook endpoint (docs/contract.md §7). The secret is kept in clear (the sender signs
/// with it); it is shown to the API caller once, when the endpoint is created.
///
/// Key in `webhooks`: the id (`wh_` + 8 hex of a creation counter + 12 random hex, UTF-8). Layout v1:
/// ```
/// u8 1 | org string | url string | events u16 (n) | n × string (event names; n = 0: every event)
///      | description string | isActive bool | secret string (whsec_…) | createdAt i64 | updatedAt i64
/// ```
public struct WebhookEndpointRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "webhook endpoint"

    /// The record's key, not part of the value.
    public var id: String
    public var org: String
    public var url: String
    /// Subscribed event names; empty means every event.
    public var events: [String]
    public var description: String
    public var isActive: Bool
    public var secret: String
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(id: String, org: String, url: String, events: [String], description: String, isActive: Bool = true,
                secret: String, createdAt: Timestamp) {
        self.id = id
        self.org = org
        self.url = url
        self.events = events
        self.description = description
        self.isActive = isActive
        self.secret = secret
        self.createdAt = createdAt
        self.updatedAt = createdAt
    }

    /// Whether an event of this name goes to this endpoint (`webhook.test` is addressed to one
    /// endpoint and goes whatever its subscription).
    public func wants(_ event: String) -> Bool { isActive && (events.isEmpty || events.contains(event)) }

    public func encode(into w: inout BinaryWriter) {
        w.string(org)
        w.string(url)
        w.u16(UInt16(events.count))
        for e in events { w.string(e) }
        w.string(description)
        w.bool(isActive)
        w.string(secret)
        w.i64(createdAt.seconds)
        w.i64(updatedAt.seconds)
    }

    public init(from r: inout BinaryReader) throws {
        id = ""
        org = try r.string()
        url = try r.string()
        events = try (0..<Int(try r.u16())).map { _ in try r.string() }
        description = try r.string()
        isActive = try r.bool()
        secret = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        updatedAt = Timestamp(seconds: try r.i64())
    }
}

extension Transaction {
    public func webhook(id: String) throws -> WebhookEndpointRecord? {
        guard var record = try get(.webhooks, Array(id.utf8)).map({ try WebhookEndpointRecord(encoded: $0) }) else {
            return nil
        }
        record.id = id
        return record
    }

    public func put(_ endpoint: WebhookEndpointRecord) throws {
        try put(.webhooks, Array(endpoint.id.utf8), endpoint.encoded())
    }

    /// Every endpoint (of `org` when given), newest first.
    public func webhooks(org: String? = nil) throws -> [WebhookEndpointRecord] {
        var found = [WebhookEndpointRecord]()
        try scan(.webhooks) { key, value in
            var record = try WebhookEndpointRecord(encoded: value)
            record.id = String(decoding: key, as: UTF8.self)
            if org.map({ $0 == record.org }) ?? true { found.append(record) }
            return true
        }
        return found.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
    }

    /// Removes up to `limit` of an endpoint's deliveries (its log and pending ones), oldest
    /// first, and the endpoint itself once none is left; whether it is gone. A long log is
    /// removed over several transactions (one LMDB write transaction can dirty only so many
    /// pages); meanwhile the endpoint stays, with what is left of its log. Its organization's
    /// `WebhookCountRecord` loses what was removed.
    @discardableResult
    public func deleteWebhook(id: String, limit: Int = .max) throws -> Bool {
        let prefix = Array(id.utf8) + [0]
        let org = try webhook(id: id)?.org
        let count = try org.map { try webhookCount(org: $0) }
        var removed = 0, more = false
        try scan(.deliveries, from: prefix) { key, value in
            guard key.count == prefix.count + 8, key.starts(with: prefix) else { return false }
            guard removed < limit else { more = true; return false }
            try delete(try DeliveryRecord(encoded: value).restored(key: key))
            removed += 1
            return true
        }
        if let org, var count, removed > 0 {
            count.remove(UInt64(removed))
            try put(count, org: org)
        }
        guard !more else { return false }
        try delete(.webhooks, Array(id.utf8))
        return true
    }
}
