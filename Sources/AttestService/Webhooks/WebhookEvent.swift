import AttestCore
import AttestStore

/// The webhook event catalogue (docs/contract.md §7; docs/webhooks.md lists each trigger and its `data`).
/// Every event is queued in the outbox inside the write transaction of the change that caused
/// it (`ServiceContext.queueEvent`), except the two failures that change nothing stored
/// (`device.attestation_failed`, a forged assertion's `attestation.anomaly`), which are the
/// only write of their own transaction.
public enum WebhookEvent: String, CaseIterable, Sendable {
    case deviceNew = "device.new"
    case attestationCompleted = "attestation.completed"
    case attestationFailed = "device.attestation_failed"
    case highRisk = "device.high_risk"
    case riskThresholdExceeded = "risk_threshold_exceeded"
    case deviceBlocked = "device_blocked"
    case anomaly = "attestation.anomaly"
    case limitReached = "usage.limit_reached"
    case graceEnded = "usage.grace_ended"
    case test = "webhook.test"

    /// What `attestation.anomaly` reports in `kind`.
    public enum Anomaly: String, Sendable {
        /// Refresh: an assertion signed by the device's key whose counter is not above the stored one.
        case counterReplayed = "counter_replayed"
        /// Refresh: an assertion signed by the device's key, presented for another app.
        case wrongApp = "wrong_app"
        /// Refresh: an assertion for a known, active keyId that its key did not sign.
        case forgedAssertion = "forged_assertion"
        /// Validate: an attestation for a keyId that is already attested.
        case attestationReplayed = "attestation_replayed"
    }
}

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

/// The `data` members events about one device share.
enum EventData {
    /// `device_id`, `key_id` (base64), `app_id`, `team_id`, `bundle_id`.
    static func device(keyID: [UInt8], deviceID: String, appID: String) -> [(String, JSONValue)] {
        let parts = appID.split(separator: ".", maxSplits: 1).map(String.init)
        return [("device_id", .string(deviceID)), ("key_id", .string(Base64.encode(keyID))), ("app_id", .string(appID)),
                ("team_id", .string(parts.first ?? "")), ("bundle_id", .string(parts.count > 1 ? parts[1] : ""))]
    }

    /// The device members plus `environment`.
    static func device(_ d: DeviceRecord) -> [(String, JSONValue)] {
        device(keyID: d.keyID, deviceID: d.deviceID, appID: d.appID)
            + [("environment", .string(d.environment.rawValue))]
    }
}
