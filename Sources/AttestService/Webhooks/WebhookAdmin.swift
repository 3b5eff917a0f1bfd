import AttestConfig
import AttestCore
import AttestStore

/// Managing an organization's webhook endpoints: what the management API
/// (`WebhooksEndpoint`) and `attestctl webhooks` both do. Every method takes the caller's
/// organization (`nil`: any, for the CLI); an endpoint of another organization is 404, exactly
/// as one that does not exist.
public struct WebhookAdmin {
    public let store: Store
    public let allowPrivate: Bool
    public let random: any RandomSource
    public let now: Timestamp
    public var quotas = Quotas()

    /// What one organization may keep in the store through this API: `endpoints`
    /// (`webhooks.endpointsPerOrganization`) and `stored`, the most its `WebhookCountRecord`
    /// may count for a test event to be queued (`webhooks.storedDeliveriesPerOrganization`,
    /// 0: no limit). Past either, 429 `store_quota_exceeded`.
    public struct Quotas: Sendable {
        public var endpoints = 20
        public var stored = 0

        public init() {}

        public init(_ configuration: Configuration) {
            endpoints = configuration.webhookEndpointsPerOrganization
            stored = configuration.webhookStoredDeliveriesPerOrganization
        }
    }

    public static let maximumDescriptionBytes = 256

    public init(store: Store, allowPrivate: Bool, random: any RandomSource, now: Timestamp) {
        self.store = store
        self.allowPrivate = allowPrivate
        self.random = random
        self.now = now
    }

    /// A new endpoint, active, with a new secret (returned once, with the record).
    public func create(org: String, url: String, events: [String]?,
                       description: String?) throws -> WebhookEndpointRecord {
        let checkedURL = try check(url: url)
        let checkedEvents = try events.map { try check(events: $0) } ?? []
        let description = try check(description: description ?? "")
        return try store.write([.durable]) { txn in
            guard try txn.org(named: org) != nil else { throw ServiceError(.notFound, "No organization \(org).") }
            guard try txn.webhooks(org: org).count < quotas.endpoints else {
                throw ServiceError(.storeQuotaExceeded,
                                   "This organization has \(quotas.endpoints) webhook endpoints, the most allowed.",
                                   hint: "Delete one first; the operator sets the limit with "
                                         + "webhooks.endpointsPerOrganization.",
                                   log: "org \(org): webhook endpoints at \(quotas.endpoints)",
                                   extra: [("limit", .int(Int64(quotas.endpoints)))])
            }
            // wh_ + a store-wide creation counter (8 hex) + 6 random bytes: ids sort by creation,
            // so endpoints created in the same second still list newest first.
            let counterKey = Array("webhook.next".utf8)
            let number = (try txn.get(.meta, counterKey).map(BigEndian.uint64) ?? 0) + 1
            try txn.put(.meta, counterKey, BigEndian.bytes(number))
            var id: String
            repeat {
                id = "wh_" + Hex.encode(BigEndian.bytes(number).suffix(4)) + Hex.encode(random.bytes(6))
            } while try txn.webhook(id: id) != nil
            let record = WebhookEndpointRecord(id: id, org: org, url: checkedURL, events: checkedEvents,
                                               description: description,
                                               secret: WebhookSignature.newSecret(random: random), createdAt: now)
            try txn.put(record)
            return record
        }
    }

    public func list(org: String?) throws -> [WebhookEndpointRecord] {
        try store.read { try $0.webhooks(org: org) }
    }

    public func get(org: String?, id: String) throws -> WebhookEndpointRecord {
        try store.read { try Self.find(org: org, id: id, in: $0) }
    }

    /// Changes the members given; the others keep their values.
    public func update(org: String?, id: String, url: String?, events: [String]?, description: String?,
                       isActive: Bool?) throws -> WebhookEndpointRecord {
        let checkedURL = try url.map { try check(url: $0) }
        let checkedEvents = try events.map { try check(events: $0) }
        let checkedDescription = try description.map { try check(description: $0) }
        return try store.write([.durable]) { txn in
            var record = try Self.find(org: org, id: id, in: txn)
            if let checkedURL { record.url = checkedURL }
            if let checkedEvents { record.events = checkedEvents }
            if let checkedDescription { record.description = checkedDescription }
            if let isActive { record.isActive = isActive }
            record.updatedAt = now
            try txn.put(record)
            return record
        }
    }

    /// Deletes the endpoint, its delivery log and its pending deliveries: in transactions of
    /// `removalBatch` deliveries, the endpoint with the last (`Transaction.deleteWebhook`).
    public func remove(org: String?, id: String) throws {
        while try !store.write([.durable], { txn in
            _ = try Self.find(org: org, id: id, in: txn)
            return try txn.deleteWebhook(id: id, limit: Self.removalBatch)
        }) {}
    }

    /// Deliveries removed per transaction when an endpoint is deleted.
    static let removalBatch = 2_000

    /// Queues `webhook.test` for this endpoint alone; returns the event's id. It counts in the
    /// organization's `WebhookCountRecord` from now on; 429 `store_quota_exceeded` when that
    /// is at `quotas.stored` already.
    public func test(org: String?, id: String) throws -> String {
        try store.write([.durable]) { txn in
            let record = try Self.find(org: org, id: id, in: txn)
            var count = try txn.webhookCount(org: record.org)
            if quotas.stored > 0 && count.stored >= UInt64(quotas.stored) {
                throw ServiceError(.storeQuotaExceeded,
                                   "This organization keeps \(quotas.stored) webhook deliveries and test events in the "
                                   + "store, the most allowed; no more test events are queued until some are removed.",
                                   hint: "Finished deliveries leave the log after webhooks.logRetentionDays, and "
                                         + "deleting an endpoint removes its log; the operator sets the limit with "
                                         + "webhooks.storedDeliveriesPerOrganization.",
                                   log: "org \(record.org): \(count.stored) webhook items stored, quota "
                                        + "\(quotas.stored)",
                                   extra: [("limit", .int(Int64(quotas.stored))),
                                           ("current", .int(Int64(clamping: count.stored)))])
            }
            count.stored &+= 1
            try txn.put(count, org: record.org)
            let event = OutboxEvent(id: "evt_" + Hex.encode(random.bytes(12)), event: WebhookEvent.test.rawValue,
                                    org: record.org, createdAt: now, dataJSON: JSONValue.object([
                                        ("webhook_id", .string(record.id)), ("organization", .string(record.org)),
                                        ("message", "This is a test event from AttestEdge."),
                                    ]).jsonText, target: record.id)
            try txn.enqueue(event)
            return event.id
        }
    }

    /// The endpoint's deliveries, newest first, at most `limit`.
    public func deliveries(org: String?, id: String, limit: Int) throws -> [DeliveryRecord] {
        try store.read { txn in
            _ = try Self.find(org: org, id: id, in: txn)
            return try txn.deliveries(endpoint: id, newestFirst: limit)
        }
    }

    static func find(org: String?, id: String, in txn: Transaction) throws -> WebhookEndpointRecord {
        guard id.utf8.count <= 64, let record = try txn.webhook(id: id), org.map({ $0 == record.org }) ?? true else {
            throw ServiceError(.notFound, "No webhook endpoint \(id).")
        }
        return record
    }

    func check(url: String) throws -> String {
        _ = try WebhookURL(url, allowPrivate: allowPrivate)
        return url
    }

    /// Known names, duplicates dropped; empty means every event.
    func check(events: [String]) throws -> [String] {
        var unique = [String]()
        for name in events where !unique.contains(name) {
            guard WebhookEvent(rawValue: name) != nil else {
                throw ServiceError(.badRequest, "The field events names an unknown event \"\(name)\".",
                                   hint: "Known: " + WebhookEvent.allCases.map(\.rawValue).joined(separator: ", ")
                                         + ".")
            }
            unique.append(name)
        }
        return unique
    }

    func check(description: String) throws -> String {
        guard description.utf8.count <= Self.maximumDescriptionBytes else {
            throw ServiceError(.badRequest,
                               "The field description is longer than \(Self.maximumDescriptionBytes) bytes.")
        }
        return description
    }
}
