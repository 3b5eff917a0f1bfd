import AttestCore
import AttestStore

/// What one organization may store of feature requests and tickets (every tier alike), checked
/// against its `FeedbackUsageRecord` in the transaction of each write:
///
/// ```
/// bound       limit         counts
/// requests    10,000        feature requests of all its apps
/// comments    100,000       comments on them
/// tickets     10,000        support tickets
/// messages    100,000       ticket messages (a ticket's first message included)
/// bytes       64 MiB        their text: titles, descriptions, comment bodies, subjects, messages
/// ```
/// Past one: 429 `store_quota_exceeded` with `limit` and `bound` (no `Retry-After`: it lasts
/// until the operator removes some).
struct FeedbackLimits {
    var requests: UInt32 = 10_000
    var comments: UInt32 = 100_000
    var tickets: UInt32 = 10_000
    var messages: UInt32 = 100_000
    var bytes: UInt64 = 64 << 20

    static let standard = FeedbackLimits()

    /// `usage` after adding `change`, or 429 naming the first bound it would pass.
    func admit(_ usage: FeedbackUsageRecord, adding change: FeedbackUsageRecord) throws -> FeedbackUsageRecord {
        let counts: [(String, UInt64, UInt64, UInt64)] = [
            ("requests", UInt64(usage.requests), UInt64(change.requests), UInt64(requests)),
            ("comments", UInt64(usage.comments), UInt64(change.comments), UInt64(comments)),
            ("tickets", UInt64(usage.tickets), UInt64(change.tickets), UInt64(tickets)),
            ("messages", UInt64(usage.messages), UInt64(change.messages), UInt64(messages)),
            ("bytes", usage.bytes, change.bytes, bytes),
        ]
        for (bound, now, add, limit) in counts where add > 0 && now + add > limit {
            throw ServiceError(.storeQuotaExceeded,
                               "This organization stores as many feedback \(bound) as it may (\(limit)).",
                               hint: "The app's team removes old feature requests or tickets to make room.",
                               log: "feedback \(bound) \(now) + \(add) > \(limit)",
                               extra: [("limit", .int(Int64(limit))), ("bound", .string(bound))])
        }
        return FeedbackUsageRecord(requests: usage.requests + change.requests,
                                   comments: usage.comments + change.comments,
                                   tickets: usage.tickets + change.tickets,
                                   messages: usage.messages + change.messages, bytes: usage.bytes + change.bytes)
    }
}
