/// What one organization keeps in the store for its webhooks, counted as it changes, so that
/// its quota (`webhooks.storedDeliveriesPerOrganization`) is checked with one read instead of
/// a scan of its delivery log.
///
/// Key in `webhook_counts`: the organization's name (UTF-8). Layout v1:
/// ```
/// u8 1 | stored u64 (its deliveries, whatever their state, plus its webhook.test events still
///                    in the outbox) | dropped u64 (events not stored because stored was at the quota)
/// ```
/// Kept in step by the transactions that add or remove what it counts: `WebhookAdmin.test`
/// (+1: the queued test event), `DeliveryQueue.fanOut` (a test event becomes its delivery:
/// −1 +1; another event +1 per delivery, or `dropped` +1 past the quota), the log's pruning
/// and `deleteWebhook` (−1 per delivery). Each reads and writes the record in the transaction
/// that changes the deliveries, so it stays exact under concurrent writers (LMDB: one writer;
/// PostgreSQL: serializable, a conflicting run is retried). An organization without a record
/// (a store from before this record, or none yet) is counted once from the databases
/// (`countWebhookItems`) when first needed; `store check` compares each record with that count.
public struct WebhookCountRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "webhook count"

    public var stored: UInt64
    public var dropped: UInt64

    public init(stored: UInt64 = 0, dropped: UInt64 = 0) {
        self.stored = stored
        self.dropped = dropped
    }

    /// `stored` less `n`, never below 0.
    public mutating func remove(_ n: UInt64) { stored = stored > n ? stored - n : 0 }

    public func encode(into w: inout BinaryWriter) {
        w.u64(stored)
        w.u64(dropped)
    }

    public init(from r: inout BinaryReader) throws {
        stored = try r.u64()
        dropped = try r.u64()
    }
}

extension Transaction {
    /// The organization's record, or a new one holding `countWebhookItems(org:)` when it has none.
    public func webhookCount(org: String) throws -> WebhookCountRecord {
        if let bytes = try get(.webhookCounts, Array(org.utf8)) { return try WebhookCountRecord(encoded: bytes) }
        return WebhookCountRecord(stored: try countWebhookItems(org: org))
    }

    public func put(_ count: WebhookCountRecord, org: String) throws {
        try put(.webhookCounts, Array(org.utf8), count.encoded())
    }

    /// What `WebhookCountRecord.stored` counts, from the databases themselves: the deliveries
    /// of the organization's endpoints and its `webhook.test` events in the outbox. Reads the
    /// whole of both (the first use per organization, and `store check`).
    public func countWebhookItems(org: String) throws -> UInt64 {
        var n: UInt64 = 0
        for endpoint in try webhooks(org: org) {
            let prefix = Array(endpoint.id.utf8) + [0]
            try scan(.deliveries, from: prefix) { key, _ in
                guard key.count == prefix.count + 8, key.starts(with: prefix) else { return false }
                n += 1
                return true
            }
        }
        for (_, event) in try outbox() where event.org == org && !event.target.isEmpty { n += 1 }
        return n
    }
}
