import AttestCore
import AttestStore

/// The per-organization limit of the org API's changes that have no limit of their own:
/// device actions, API keys (the org pool) and moderation of feature requests and tickets
/// (the feedback pool). Flags and webhooks keep theirs (`flags.writesPerOrganizationPerMinute`,
/// `webhooks.writesPerOrganizationPerMinute`).
///
/// ```
/// rates  window end ‖ "org-write:" ‖ organization      org.writesPerOrganizationPerMinute
/// ```
/// Each change is a durable write and an audit entry: without it one session or key in a loop
/// would hold the store's writer every tenant uses and grow the audit log without bound.
enum OrgWriteLimit {
    /// Charges one change of `org`. - Throws: 429 `rate_limited` with `Retry-After` when spent.
    static func charge(org: String, now: Timestamp, _ ctx: ServiceContext) throws {
        try charge("org-write:", limit: ctx.configuration.orgWritesPerOrganizationPerMinute, org: org,
                   what: "one organization's changes to devices, API keys, feature requests and tickets",
                   key: "org.writesPerOrganizationPerMinute", now: now, ctx)
    }

    /// Charges one change of `org` to the minute bucket `prefix ‖ org` of `limit` (0: none),
    /// sweeping expired windows when due. - Throws: 429 `rate_limited` naming `what` and the
    /// config `key` that sets the limit.
    static func charge(_ prefix: String, limit: Int, org: String, what: String, key: String, now: Timestamp,
                       _ ctx: ServiceContext) throws {
        guard limit > 0 else { return }
        let over = try ctx.store.write([.ephemeral]) { txn in
            try RateLimits.sweepExpiredIfDue(in: txn, now: now, ctx)
            return try RateLimits.charge([(prefix + org, UInt32(limit))], in: txn, now: now)
        }.over
        guard let over else { return }
        throw RateLimits.rateLimited(over, now: now, what: what,
                                     hint: "Retry after the Retry-After header's seconds; the operator sets the "
                                           + "limit with \(key).")
    }
}
