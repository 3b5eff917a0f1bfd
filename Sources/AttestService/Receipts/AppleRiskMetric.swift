import AttestCore
import AttestStore

/// Storing a receipt Apple answered when one was redeemed (a RECEIPT, carrying the risk
/// metric), and what follows from it: the receipt record, the device's copy of the metric
/// (`DeviceRecord.appleRiskMetric`, which tokens and the risk signal `apple_risk_metric` read),
/// its history, and `device.risk_metric_changed` when the metric crosses the app's threshold.
///
/// The redeemer (`attest-receipts`) calls `record` after a 200, in its write transaction, once
/// it has verified Apple's answer with `ReceiptVerifier` like any receipt.
public enum AppleRiskMetric {
    /// How old a receipt just obtained may be (Apple: five minutes).
    public static let maxAgeSeconds: Int64 = 300

    /// What `record` changed.
    public struct Change: Sendable, Equatable {
        public let metric: UInt32
        /// The device's metric before (nil: none was known).
        public let previous: UInt32?
        /// The app's threshold (0: off, then no event).
        public let threshold: UInt32
        /// Whether `device.risk_metric_changed` was queued.
        public let crossed: Bool
    }

    /// Stores `receipt` (verified, its DER `raw`) as the receipt of device key `keyID`, in place
    /// of the old one, with its fields, a sample in the history, the redemption's outcome
    /// (`failures` reset, `lastStatus` 200, `redeemedAt` = `at`) and `next`, its next
    /// redemption (nil: none; `receipt_due` follows); copies the metric and the receipt's
    /// creation time onto the device, marks the device's receipt valid, and queues
    /// `device.risk_metric_changed` when the metric goes from at or below the app's
    /// `appleRiskMetricThreshold` (or unknown) to above it, or from above it to at or below it:
    /// ```
    /// {device members (EventData.device), "apple_risk_metric", "previous_apple_risk_metric" (or null),
    ///  "threshold", "direction": "above" | "below", "receipt_created_at"}
    /// ```
    /// - Throws: `AttestError` for a receipt that is not about this key (App ID, field 3's public
    ///   key), not a RECEIPT with a metric, expired, or created more than `maxAgeSeconds`
    ///   before `at`, or for a key no device has; nothing is stored then.
    @discardableResult
    public static func record(_ receipt: AppAttestReceipt, raw: [UInt8], keyID: [UInt8], at: Timestamp,
                              next: Timestamp?, in txn: Transaction, context ctx: ServiceContext) throws -> Change {
        guard var device = try txn.device(keyID: keyID) else {
            throw AttestError(.receiptKey, "no device has the key \(Base64.encode(keyID))")
        }
        guard receipt.kind == .receipt, let rawMetric = receipt.riskMetric else {
            throw AttestError(.receiptMalformed, "a redeemed receipt must be a RECEIPT with a risk metric")
        }
        try receipt.check(appID: device.appID, publicKey: device.publicKey[...], at: at, maxAge: maxAgeSeconds)
        let metric = UInt32(clamping: rawMetric)
        let old = try txn.receiptRecord(keyID: keyID)
        var stored = ReceiptCheck.record(receipt, raw: raw, anchor: old?.anchor ?? .apple)
        stored.history = old?.history ?? []
        stored.record(metric: metric, at: at)
        stored.nextRedeemAt = next
        stored.failures = 0
        stored.lastAttemptAt = at
        stored.lastStatus = 200
        stored.lastOutcome = "redeemed"
        stored.redeemedAt = at
        try txn.put(stored, keyID: keyID, previousDue: old?.nextRedeemAt)

        let previous = device.appleRiskMetric
        let threshold = try txn.app(id: device.appID)?.appleRiskMetricThreshold ?? 0
        device.appleRiskMetric = metric
        device.appleRiskMetricAt = receipt.createdAt
        device.receiptCheck = .valid
        try txn.put(device)
        let wasAbove = (previous ?? 0) > threshold, isAbove = metric > threshold
        let crossed = threshold > 0 && wasAbove != isAbove
        if crossed, let app = try txn.app(id: device.appID) {
            try ctx.queueEvent(.riskMetricChanged, org: app.org, in: txn, now: at, data: EventData.device(device) + [
                ("apple_risk_metric", .int(Int64(metric))),
                ("previous_apple_risk_metric", previous.map { .int(Int64($0)) } ?? .null),
                ("threshold", .int(Int64(threshold))), ("direction", .string(isAbove ? "above" : "below")),
                ("receipt_created_at", .string(receipt.createdAt.iso8601)),
            ])
        }
        return Change(metric: metric, previous: previous, threshold: threshold, crossed: crossed)
    }
}
