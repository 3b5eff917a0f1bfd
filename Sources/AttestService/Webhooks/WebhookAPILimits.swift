import AttestCore
import AttestStore

/// The rate limits of the webhook management API's writes and of
/// `POST /api/v1/org/webhooks/:id/test`: fixed minutes in the ephemeral
/// `rates` database, as validate's (`Admission.swift`).
///
/// ```
/// rates  window end ‖ "webhook-test:" ‖ endpoint id      webhooks.testEventsPerEndpointPerMinute
/// rates  window end ‖ "webhook-test-org:" ‖ organization  webhooks.testEventsPerOrganizationPerMinute
/// rates  window end ‖ "webhook-write-org:" ‖ organization webhooks.writesPerOrganizationPerMinute
/// ```
/// Only an endpoint the caller's organization has is charged (the API answers 404 first), so
/// the buckets are as many as the endpoints, and each is gone a minute after its window.
enum WebhookAPILimits {
    /// Charges one change of an endpoint (create, update, delete) to the organization's bucket
    /// (`webhooks.writesPerOrganizationPerMinute`): each is a durable write waiting on a sync,
    /// so one API key in a loop would otherwise hold the store's writer and disk that every
    /// tenant's requests use. - Throws: 429 `rate_limited` with `Retry-After` when it is spent.
    static func chargeWrite(org: String, now: Timestamp, _ ctx: ServiceContext) throws {
        let perOrg = ctx.configuration.webhookWritesPerOrganizationPerMinute
        guard perOrg > 0 else { return }
        let bucket = ("webhook-write-org:" + org, UInt32(perOrg))
        guard let over = try chargeMinute([bucket], now: now, ctx) else { return }
        throw RateLimits.rateLimited(over, now: now, what: "changes to one organization's webhook endpoints",
                                     hint: retryHint + "webhooks.writesPerOrganizationPerMinute.")
    }

    /// Charges one test event to the endpoint's bucket, then (if that is within its limit) the
    /// organization's. - Throws: 429 `rate_limited` with `Retry-After` when either is spent.
    static func chargeTestEvent(org: String, endpoint: String, now: Timestamp, _ ctx: ServiceContext) throws {
        let perEndpoint = ctx.configuration.webhookTestEventsPerEndpointPerMinute,
            perOrg = ctx.configuration.webhookTestEventsPerOrganizationPerMinute
        var buckets = [(name: String, limit: UInt32)]()
        if perEndpoint > 0 { buckets.append(("webhook-test:" + endpoint, UInt32(perEndpoint))) }
        if perOrg > 0 { buckets.append(("webhook-test-org:" + org, UInt32(perOrg))) }
        guard !buckets.isEmpty, let over = try chargeMinute(buckets, now: now, ctx) else { return }
        let endpointWide = over.0 == buckets[0].name && perEndpoint > 0
        let what = endpointWide ? "test events to one endpoint" : "test events for one organization"
        let key = endpointWide ? "webhooks.testEventsPerEndpointPerMinute."
                               : "webhooks.testEventsPerOrganizationPerMinute."
        throw RateLimits.rateLimited(over, now: now, what: what, hint: retryHint + key)
    }

    /// The start of a 429's hint; the key that sets the limit follows.
    private static let retryHint = "Retry after the Retry-After header's seconds; the operator sets the limit with "

    /// Charges `buckets` in one ephemeral write (sweeping expired windows when due); the first
    /// one over its limit, or nil.
    private static func chargeMinute(_ buckets: [(name: String, limit: UInt32)], now: Timestamp,
                                     _ ctx: ServiceContext) throws -> (String, UInt32)? {
        try ctx.store.write([.ephemeral]) { txn in
            try RateLimits.sweepExpiredIfDue(in: txn, now: now, ctx)
            return try RateLimits.charge(buckets, in: txn, now: now)
        }.over
    }
}
