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
/// end). Charged before the write, so a refused write still counts.
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

    static func charge(_ action: Action, author: FeedbackAuthor, now: Timestamp, _ ctx: ServiceContext) throws {
        let (limit, window, key) = action.limit(ctx.configuration)
        guard limit > 0 else { return }
        let windowEnd = (now.seconds / window + 1) * window
        let bucket = "feedback:" + action.rawValue + ":" + author.description
        let hits = try ctx.store.write([.ephemeral]) { txn -> UInt32 in
            try RateLimits.sweepExpiredIfDue(in: txn, now: now, ctx)
            return try txn.hitRateWindow(bucket, windowEnd: windowEnd)
        }
        guard hits > UInt32(limit) else { return }
        ServiceMetrics.rateLimited(bucket: bucket)
        let retry = max(1, windowEnd - now.seconds)
        let per = window == 86_400 ? "day" : "hour"
        throw ServiceError(.rateLimited, "Rate limit exceeded: at most \(limit) \(action.rawValue)s per device "
                                         + "per \(per). Retry after \(retry) seconds.",
                           hint: "Retry after the Retry-After header's seconds; the operator sets the limit with "
                                 + key + ".",
                           log: "bucket feedback:\(action.rawValue)",
                           headers: [("Retry-After", String(retry)), ("X-RateLimit-Limit", String(limit)),
                                     ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retry))])
    }
}
