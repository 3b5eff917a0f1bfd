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
    /// Apple's risk metric for a device crossed its app's threshold (`AppleRiskMetric.record`).
    case riskMetricChanged = "device.risk_metric_changed"
    case riskThresholdExceeded = "risk_threshold_exceeded"
    case deviceBlocked = "device_blocked"
    case anomaly = "attestation.anomaly"
    case limitReached = "usage.limit_reached"
    case graceEnded = "usage.grace_ended"
    /// An app's feature flags, environments, rules, rollouts or overrides changed
    /// (`FeatureFlagAdmin`: `action` says which).
    case flagChanged = "flag.changed"
    /// A device submitted a feature request (`FeedbackWrites`); data has its push token.
    case feedbackCreated = "feedback.created"
    /// A device or the app's team commented on a feature request.
    case feedbackCommented = "feedback.commented"
    /// The app's team changed a feature request's status, or merged it (`FeedbackModeration`).
    case feedbackStatusChanged = "feedback.status_changed"
    /// A device opened a support ticket.
    case ticketCreated = "ticket.created"
    /// A device or the app's team replied on a support ticket.
    case ticketMessage = "ticket.message"
    /// The app's team changed a ticket's status or priority (an admin reply sets it `awaiting_reply`).
    case ticketStatusChanged = "ticket.status_changed"
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
