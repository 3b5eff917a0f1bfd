/// The fixed table of counters every metrics segment holds (`MetricsSegment`): which slot
/// counts what. Each slot is one little-endian `UInt64`; the whole table has `slotCount` slots.
/// Every label value is one of a fixed list below, so the table (and the exposition) is bounded
/// and no label can name a device, a key, an address or an app.
///
/// ```
/// slot                      what (a histogram's buckets are per bucket, not cumulative;
///                           its sum is in microseconds, or in the unit its family says)
/// 0                         pool workers (a gauge, set by the master)
/// 1                         worker restarts
/// 2                         reloads
/// 3 ..< 8                   reserved (zero)
/// requests                  endpoints × statuses (HTTP 100...599): requests answered
/// durations                 endpoints × (12 buckets, sum µs, count): time in the pool
/// verificationFailures      verificationSteps: validate's failed Apple steps
/// refreshOutcomes           refreshOutcomes
/// rateLimited               rateBuckets: 429s by bucket kind
/// groupCommitSizes          (8 buckets, sum, count): writes per group commit
/// syncDurations             (13 buckets, sum µs, count): waits for durability that synced
/// webhookAttempts           webhookClasses: delivery attempts by answer class
/// receiptVerifications      receiptResults: validate's checks of the attestation's receipt
/// receiptRedemptions        receiptStatuses: attest-receipts' requests to Apple by answer
/// flagStreamAuths           flagStreamAuthOutcomes: the flag stream's auth subrequests
/// flagPublishes             flagPublishOutcomes: publishes to the flag stream (nchan)
/// ```
/// A change to any list is a new `MetricsSegment.version`: a segment of another layout is
/// replaced, never read with this one.
public enum MetricsLayout {
    /// The endpoints' names in the log (`endpoint` label): every name a pool answers under.
    public static let endpoints = ["challenge", "validate", "refresh", "heartbeat", "usage", "webhooks", "healthz",
                                   "metrics", "flags", "flags-stream-auth", "whats-new", "whats-new-seen", "org-flags",
                                   "org-release-notes", "feature-requests", "feature-votes", "feature-comments",
                                   "tickets", "ticket-messages", "org-feedback", "org-tickets", "org-devices",
                                   "org-apps", "org-api-keys", "org-audit", "console-session"]
    /// HTTP statuses counted: 100...599, one slot each.
    public static let statuses = 100...599
    /// Request duration buckets' upper bounds in µs, and as `le` label values.
    public static let durationBoundsMicroseconds: [UInt64] = [1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000,
                                                              250_000, 500_000, 1_000_000, 2_500_000]
    public static let durationLabels = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
                                        "1", "2.5"]
    /// Validate's verification failures: `AttestError.Code`'s values (the verifier's failure
    /// reasons, Apple's steps among them), then `other` for anything else.
    public static let verificationSteps = [
        "cbor_malformed", "cbor_limit_exceeded", "der_malformed", "base64_invalid", "json_malformed",
        "authenticator_data_malformed", "public_key_invalid", "format", "certificate_chain", "nonce", "key_id",
        "rp_id_hash", "counter", "environment", "credential_id", "assertion_format", "signature", "crypto",
        "key_invalid", "other",
    ]
    public static let refreshOutcomes = ["ok", "replay", "forged", "revoked", "blocked"]
    /// Rate-limit bucket kinds: a bucket's name up to its first `:`; `api-key-devices` is
    /// heartbeat's monthly cap on API-key devices (`usage.apiKeyDevicesPerMonth`), not a bucket
    /// of `RateLimits`; `other` for anything else.
    public static let rateBuckets = ["validate-ip", "refresh-ip", "org", "webhook-write-org", "webhook-test",
                                     "webhook-test-org", "api-key-devices", "feedback", "other"]
    /// Group commit sizes' upper bounds (writes), and as `le` label values.
    public static let groupSizeBounds: [UInt64] = [1, 2, 4, 8, 16, 32, 64]
    public static let groupSizeLabels = ["1", "2", "4", "8", "16", "32", "64"]
    /// Durability sync waits' upper bounds in µs, and as `le` label values.
    public static let syncBoundsMicroseconds: [UInt64] = [100, 250, 500, 1000, 2500, 5000, 10_000, 25_000,
                                                          50_000, 100_000, 250_000, 1_000_000]
    public static let syncLabels = ["0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
                                    "0.05", "0.1", "0.25", "1"]
    public static let webhookClasses = ["2xx", "3xx", "4xx", "5xx", "error"]
    /// What validate found of an attestation's receipt: verified and about the key, refused
    /// (a reason in the log and the stored record), or none in the attestation.
    public static let receiptResults = ["valid", "invalid", "absent"]
    /// Apple's answers to a redemption (`RedemptionOutcome.metricLabel`): the documented codes,
    /// `error` (no answer), `other` for any other code.
    public static let receiptStatuses = ["200", "304", "400", "401", "404", "429", "500", "502", "503", "504",
                                         "error", "other"]
    /// The flag stream's auth subrequests (`flags-stream-auth`) by the answer's status: 2xx
    /// `allowed` (nchan subscribes the stream), 401 `unauthorized`, 403 `forbidden`, any other
    /// 4xx `bad_request` (a bad environment, missing app headers, not a GET), else `error`
    /// (5xx: the store did not answer).
    public static let flagStreamAuthOutcomes = ["allowed", "unauthorized", "forbidden", "bad_request", "error"]
    /// A publish to the flag stream's publisher socket: nginx answered 2xx, or not (no answer,
    /// another status).
    public static let flagPublishOutcomes = ["ok", "failed"]

    public static let poolWorkers = 0
    public static let poolRestarts = 1
    public static let poolReloads = 2
    public static let requests = 8
    /// Slots per request-duration histogram: the finite buckets, +Inf, sum, count.
    public static let durationStride = durationBoundsMicroseconds.count + 3
    public static let durations = requests + endpoints.count * statuses.count
    public static let verificationFailures = durations + endpoints.count * durationStride
    public static let refreshOutcomeSlots = verificationFailures + verificationSteps.count
    public static let rateLimited = refreshOutcomeSlots + refreshOutcomes.count
    public static let groupCommitSizes = rateLimited + rateBuckets.count
    public static let syncDurations = groupCommitSizes + groupSizeBounds.count + 3
    public static let webhookAttempts = syncDurations + syncBoundsMicroseconds.count + 3
    public static let receiptVerifications = webhookAttempts + webhookClasses.count
    public static let receiptRedemptions = receiptVerifications + receiptResults.count
    public static let flagStreamAuths = receiptRedemptions + receiptStatuses.count
    public static let flagPublishes = flagStreamAuths + flagStreamAuthOutcomes.count
    public static let slotCount = flagPublishes + flagPublishOutcomes.count

    /// The slot counting `status` answers of `endpoint` (an index into `endpoints`); `nil`
    /// for a status outside 100...599.
    public static func requestSlot(endpoint: Int, status: Int) -> Int? {
        guard statuses.contains(status) else { return nil }
        return requests + endpoint * statuses.count + (status - statuses.lowerBound)
    }

    /// The bucket (0 ..< bounds.count + 1; the last is +Inf) `value` falls in.
    public static func bucket(_ value: UInt64, _ bounds: [UInt64]) -> Int {
        var i = 0
        while i < bounds.count, value > bounds[i] { i += 1 }
        return i
    }
}
