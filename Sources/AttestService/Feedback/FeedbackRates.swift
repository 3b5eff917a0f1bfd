import AttestConfig
import AttestCore
import AttestStore

/// Per-device write limits of feature requests and tickets, in the ephemeral `rates` database
/// (as `RateLimits`), keyed by the author (a device's lineage: all of its keys share one):
///
/// ```
/// rates  window end ‖ "feedback:" ‖ action ‖ ":" ‖ author (hex)   window
///   request  feedback.requestsPerDevicePerDay   10   UTC day
///   vote     feedback.votesPerDevicePerHour     60   clock hour (vote and unvote)
///   comment  feedback.commentsPerDevicePerHour  30   clock hour
///   ticket   feedback.ticketsPerDevicePerDay     5   UTC day
///   message  feedback.messagesPerDevicePerHour  30   clock hour
/// ```
/// 0 turns one off. Past one: 429 `rate_limited` with `Retry-After` (seconds to the window's
/// end). Charged before the write, so a refused write still counts. An API key's author takes
/// the client-claimed `X-Device-ID`, so its writes are also charged to the key as a whole
/// (`"feedback:" ‖ action ‖ ":key:" ‖ key id`) at `apiKeyDevices` times the device limit: a
/// simulator build cannot spend its organization's bounds by sending a new id each time.
enum FeedbackRates {
    enum Action: String {
        case request, vote, comment, ticket, message

        func limit(_ c: Configuration) -> (count: Int, window: Int64, key: String) {
            switch self {
            case .request: return (c.feedbackRequestsPerDevicePerDay, 86_400, "feedback.requestsPerDevicePerDay")
            case .vote: return (c.feedbackVotesPerDevicePerHour, 3_600, "feedback.votesPerDevicePerHour")
            case .comment: return (c.feedbackCommentsPerDevicePerHour, 3_600, "feedback.commentsPerDevicePerHour")
            case .ticket: return (c.feedbackTicketsPerDevicePerDay, 86_400, "feedback.ticketsPerDevicePerDay")
            case .message: return (c.feedbackMessagesPerDevicePerHour, 3_600, "feedback.messagesPerDevicePerHour")
            }
        }
    }

    /// How many devices' worth of writes one API key may make (simulators and CI builds).
    static let apiKeyDevices = 10

    /// Charges the caller's author, and an API-key caller's key as a whole.
    static func charge(_ action: Action, caller: FeedbackCaller, now: Timestamp, _ ctx: ServiceContext) throws {
        try charge(action, author: caller.author, now: now, ctx)
        if let id = caller.apiKeyID {
            try charge(action, bucketSuffix: "key:" + id, scale: apiKeyDevices, what: "API key", now: now, ctx)
        }
    }

    static func charge(_ action: Action, author: FeedbackAuthor, now: Timestamp, _ ctx: ServiceContext) throws {
        try charge(action, bucketSuffix: author.description, scale: 1, what: "device", now: now, ctx)
    }

    private static func charge(_ action: Action, bucketSuffix: String, scale: Int, what: String, now: Timestamp,
                               _ ctx: ServiceContext) throws {
        let (perDevice, window, key) = action.limit(ctx.configuration)
        guard perDevice > 0 else { return }
        let limit = perDevice * scale
        let windowEnd = (now.seconds / window + 1) * window
        let bucket = "feedback:" + action.rawValue + ":" + bucketSuffix
        let hits = try ctx.store.write([.ephemeral]) { txn -> UInt32 in
            try RateLimits.sweepExpiredIfDue(in: txn, now: now, ctx)
            return try txn.hitRateWindow(bucket, windowEnd: windowEnd)
        }
        guard hits > UInt32(limit) else { return }
        ServiceMetrics.rateLimited(bucket: bucket)
        let retry = max(1, windowEnd - now.seconds)
        let per = window == 86_400 ? "day" : "hour"
        throw ServiceError(.rateLimited, "Rate limit exceeded: at most \(limit) \(action.rawValue)s per \(what) "
                                         + "per \(per). Retry after \(retry) seconds.",
                           hint: "Retry after the Retry-After header's seconds; the operator sets the limit with "
                                 + key + ".",
                           log: "bucket feedback:\(action.rawValue)",
                           headers: [("Retry-After", String(retry)), ("X-RateLimit-Limit", String(limit)),
                                     ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retry))])
    }
}
