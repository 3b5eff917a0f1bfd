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
extension ServiceContext {
    /// Charges one change of an endpoint (create, update, delete) to the organization's bucket
    /// (`webhooks.writesPerOrganizationPerMinute`): each is a durable write waiting on a sync,
    /// so one API key in a loop would otherwise hold the store's writer and disk that every
    /// tenant's requests use. - Throws: 429 `rate_limited` with `Retry-After` when it is spent.
    func chargeWebhookWrite(org: String, now: Timestamp) throws {
        let perOrg = configuration.webhookWritesPerOrganizationPerMinute
        guard perOrg > 0 else { return }
        guard let over = try chargeMinute([("webhook-write-org:" + org, UInt32(perOrg))], now: now) else { return }
        throw rateLimited(over, now: now, what: "changes to one organization's webhook endpoints",
                          hint: "Retry after the Retry-After header's seconds; the operator sets the limit with "
                              + "webhooks.writesPerOrganizationPerMinute.")
    }

    /// Charges one test event to the endpoint's bucket, then (if that is within its limit) the
    /// organization's. - Throws: 429 `rate_limited` with `Retry-After` when either is spent.
    func chargeTestEvent(org: String, endpoint: String, now: Timestamp) throws {
        let perEndpoint = configuration.webhookTestEventsPerEndpointPerMinute,
            perOrg = configuration.webhookTestEventsPerOrganizationPerMinute
        var buckets = [(name: String, limit: UInt32)]()
        if perEndpoint > 0 { buckets.append(("webhook-test:" + endpoint, UInt32(perEndpoint))) }
        if perOrg > 0 { buckets.append(("webhook-test-org:" + org, UInt32(perOrg))) }
        guard !buckets.isEmpty, let over = try chargeMinute(buckets, now: now) else { return }
        let endpointWide = over.0 == buckets[0].name && perEndpoint > 0
        throw rateLimited(over, now: now,
                          what: endpointWide ? "test events to one endpoint" : "test events for one organization",
                          hint: "Retry after the Retry-After header's seconds; the operator sets the limit with "
                              + (endpointWide ? "webhooks.testEventsPerEndpointPerMinute."
                                              : "webhooks.testEventsPerOrganizationPerMinute."))
    }

    /// Charges `buckets` in one ephemeral write (sweeping expired windows when due); the first
    /// one over its limit, or nil.
    private func chargeMinute(_ buckets: [(name: String, limit: UInt32)], now: Timestamp) throws -> (String, UInt32)? {
        try store.write([.ephemeral]) { txn in
            try sweepExpiredIfDue(in: txn, now: now)
            return try charge(buckets, in: txn, now: now)
        }.over
    }
}
