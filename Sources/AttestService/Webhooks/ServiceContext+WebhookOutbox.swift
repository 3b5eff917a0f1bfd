import AttestCore
import AttestStore

/// Events into the webhook outbox, in the transaction whose change they report (the sender,
/// `attest-webhooks deliver`, delivers them).
extension ServiceContext {
    /// Queues `event` for its organization's endpoints in `txn`; `target` restricts it to one
    /// endpoint (`webhook.test`). Nothing is queued when `webhooks.queueEvents` is false.
    public func queueEvent(_ event: WebhookEvent, org: String, in txn: Transaction, now: Timestamp,
                           data: [(String, JSONValue)], target: String = "") throws {
        guard configuration.webhookQueueEvents else { return }
        try txn.enqueue(OutboxEvent(id: "evt_" + Hex.encode(random.bytes(12)), event: event.rawValue, org: org,
                                    createdAt: now, dataJSON: JSONValue.object(data).jsonText, target: target))
    }

    /// Queues an event by name (kept for callers that predate `WebhookEvent`); the name must be
    /// in the catalogue.
    func queueEvent(_ event: String, org: String, in txn: Transaction, now: Timestamp,
                    data: [(String, JSONValue)]) throws {
        guard let known = WebhookEvent(rawValue: event) else {
            preconditionFailure("event \(event) is not in the catalogue")
        }
        try queueEvent(known, org: org, in: txn, now: now, data: data)
    }
}
