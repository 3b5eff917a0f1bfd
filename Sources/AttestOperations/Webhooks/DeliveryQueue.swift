import AttestCore
import AttestService
import AttestStore

/// One attempt to send, handed to a sender thread: everything it needs, copied out of the store.
public struct DeliveryJob: Sendable {
    public let endpointID: String
    /// The organization the endpoint belongs to (what `webhooks.concurrencyPerOrganization` counts).
    public let organization: String
    public let sequence: UInt64
    public let url: String
    public let headers: [(String, String)]
    public let body: [UInt8]
    /// The `nextAttemptAt` it was due at (its `delivery_due` key).
    let dueAt: Timestamp?

    var key: [UInt8] { Array(endpointID.utf8) + [0] + BigEndian.bytes(sequence) }
}

/// What one attempt gave.
public struct AttemptResult: Sendable {
    /// The HTTP status, 0 when there was none.
    public var status: Int
    public var durationMs: Int
    /// At most `excerptBytes` of the response body.
    public var excerpt: String
    /// Why there was no usable answer (timeout, refused, a blocked address); empty otherwise.
    public var error: String

    public static let excerptBytes = 256

    /// The log's excerpt of an answer's body: its first `excerptBytes` bytes as text, cut
    /// back to at most `excerptBytes` bytes of UTF-8 (bytes that are not UTF-8 become U+FFFD,
    /// three bytes each, which could otherwise triple the excerpt).
    public static func excerpt(of body: [UInt8]) -> String {
        var text = String(decoding: body.prefix(excerptBytes), as: UTF8.self)
        while text.utf8.count > excerptBytes { text.removeLast() }
        return text
    }

    public init(status: Int, durationMs: Int, excerpt: String, error: String) {
        self.status = status
        self.durationMs = durationMs
        self.excerpt = excerpt
        self.error = error
    }

    public var succeeded: Bool { (200...299).contains(status) }
}

/// The store side of delivery, each step one short transaction and none held across network
/// I/O: move queued events to per-endpoint deliveries (`fanOut`), read what is due (`due`),
/// record attempts (`record`). A delivery leaves the due queue only in the transaction that
/// records its final outcome, so a sender killed at any point re-sends, never loses.
public struct DeliveryQueue {
    public let store: Store
    public let retrySchedule: [Int]
    /// `webhooks.storedDeliveriesPerOrganization`: the most an organization's
    /// `WebhookCountRecord.stored` may reach by fan-out (0: no limit).
    public let storedQuota: Int

    public init(store: Store, retrySchedule: [Int], storedQuota: Int = 0) {
        self.store = store
        self.retrySchedule = retrySchedule
        self.storedQuota = storedQuota
    }

    /// Replaces up to `limit` outbox events by one pending delivery per endpoint they go to
    /// (active, of the event's organization, subscribed, or the one `target`), due `now`, in one
    /// write transaction. Events no endpoint wants are dropped. Returns how many were taken.
    ///
    /// Each delivery counts in its organization's `WebhookCountRecord`. A `webhook.test`
    /// event was counted when it was queued (and refused past the quota then), so it becomes
    /// its delivery whatever the count; any other event's delivery is not stored once the
    /// organization stores `storedQuota` (counted in `dropped` instead), so however many events
    /// an organization's devices, or outsiders failing attestations for its apps, cause, its
    /// log and pending deliveries stay within the quota and no other organization notices.
    @discardableResult
    public func fanOut(limit: Int, now: Timestamp) throws -> Int { try fanOutReporting(limit: limit, now: now).taken }

    /// `fanOut`, also telling how many deliveries each organization had dropped for its quota.
    func fanOutReporting(limit: Int, now: Timestamp) throws -> (taken: Int, dropped: [String: Int]) {
        guard try store.read({ try !$0.outbox(limit: 1).isEmpty }) else { return (0, [:]) }
        return try store.write([.durable]) { txn in
            let queued = try txn.outbox(limit: limit)
            var endpoints = [String: [WebhookEndpointRecord]]()
            var counts = [String: WebhookCountRecord](), dropped = [String: Int]()
            for (sequence, event) in queued {
                if endpoints[event.org] == nil { endpoints[event.org] = try txn.webhooks(org: event.org) }
                // Read before anything of this organization changes in this transaction.
                var count = try counts[event.org] ?? txn.webhookCount(org: event.org)
                if !event.target.isEmpty { count.remove(1) }
                for endpoint in endpoints[event.org]!
                where event.target.isEmpty ? endpoint.wants(event.event) : endpoint.id == event.target {
                    guard !event.target.isEmpty || storedQuota == 0 || count.stored < UInt64(storedQuota) else {
                        count.dropped &+= 1
                        dropped[event.org, default: 0] += 1
                        continue
                    }
                    try txn.put(DeliveryRecord(endpointID: endpoint.id, event: event, firstAttemptAt: now))
                    count.stored &+= 1
                }
                counts[event.org] = count
                try txn.dequeue(sequence)
            }
            for (org, count) in counts { try txn.put(count, org: org) }
            return (queued.count, dropped)
        }
    }

    /// Jobs due at `now`, earliest first, at most `limit`, passing over `busy` keys, endpoints
    /// whose count in `perEndpoint` has reached `endpointLimit`, and endpoints of organizations
    /// whose count in `perOrganization` has reached `organizationLimit` (0: none), each claimed
    /// for this worker.
    /// Deliveries to an endpoint that is inactive or gone are marked `skipped` instead.
    ///
    /// The claim is a lease: in one write transaction each job's `nextAttemptAt` moves to
    /// `now + leaseSeconds` (longer than an attempt can take), if it is still the due time this
    /// worker read. Of several workers (one per host on a shared PostgreSQL store) that read the
    /// same due delivery, exactly one leases it; the others see it moved and pass over it. A
    /// worker that dies mid-attempt leaves the lease to expire: the delivery is then due again
    /// and is sent once more (at least once, as ever; receivers dedupe by `webhook-id`).
    ///
    /// A slow endpoint holds up only itself: its due entries are passed over by key, without
    /// reading them, once it has `endpointLimit` in flight, so however many of them come first,
    /// other endpoints' deliveries are reached. Likewise an organization with many slow
    /// endpoints holds at most `organizationLimit` attempts: the other threads are left to the
    /// other organizations. The work per call is bounded all the same: one
    /// scan from the earliest entry and one from `resume` (where the previous call's second scan
    /// stopped, nil: the start), each looking at `scanBudget / 2` entries at most. Behind a
    /// backlog longer than that, the second scan moves on each call and wraps around at the end,
    /// so every due delivery is reached within (backlog ÷ scanBudget × 2) calls.
    public func due(now: Timestamp, limit: Int, busy: Set<[UInt8]>, perEndpoint: [String: Int], endpointLimit: Int,
                    perOrganization: [String: Int] = [:], organizationLimit: Int = 0,
                    leaseSeconds: Int = 60) throws -> [DeliveryJob] {
        var resume: [UInt8]?
        return try due(now: now, limit: limit, busy: busy, perEndpoint: perEndpoint, endpointLimit: endpointLimit,
                       perOrganization: perOrganization, organizationLimit: organizationLimit,
                       leaseSeconds: leaseSeconds, resume: &resume)
    }

    /// How many `delivery_due` entries one call of `due` looks at, at most.
    public static let scanBudget = 1_024
    /// How many deliveries to inactive or deleted endpoints one call of `due` marks skipped, at most.
    static let skipLimit = 64

    public func due(now: Timestamp, limit: Int, busy: Set<[UInt8]>, perEndpoint: [String: Int], endpointLimit: Int,
                    perOrganization: [String: Int] = [:], organizationLimit: Int = 0,
                    leaseSeconds: Int = 60, resume: inout [UInt8]?) throws -> [DeliveryJob] {
        guard limit > 0 else { return [] }
        let from = resume
        let (candidates, skipped, next) = try store.read { txn -> ([DeliveryJob], [DeliveryRecord], [UInt8]?) in
            var counts = perEndpoint, orgCounts = perOrganization
            var endpoints = [String: WebhookEndpointRecord?]()
            var taken = 0, passedOver = 0
            func endpoint(_ id: String) throws -> WebhookEndpointRecord? {
                if let known = endpoints[id] { return known }
                let found = try txn.webhook(id: id)
                endpoints[id] = .some(found)
                return found
            }
            func choose(_ key: [UInt8]) throws -> Transaction.DueChoice {
                if taken == limit && passedOver == Self.skipLimit { return .stop }
                guard !busy.contains(key) else { return .pass }
                let id = DeliveryRecord.endpointID(ofKey: key)
                guard let target = try endpoint(id), target.isActive else {
                    guard passedOver < Self.skipLimit else { return .pass }
                    passedOver += 1
                    return .take
                }
                guard taken < limit, counts[id, default: 0] < endpointLimit else { return .pass }
                guard organizationLimit <= 0 || orgCounts[target.org, default: 0] < organizationLimit else {
                    return .pass
                }
                counts[id, default: 0] += 1
                orgCounts[target.org, default: 0] += 1
                taken += 1
                return .take
            }
            let first = try txn.dueDeliveries(now: now, scanLimit: Self.scanBudget / 2, choose: choose)
            var found = first.found, next: [UInt8]?
            if let stopped = first.next {
                // More is due than one scan looks at: go on from the previous call's resume
                // point (or from here, if that is behind where this scan stopped).
                let start = from.map { stopped.lexicographicallyPrecedes($0) ? $0 : stopped } ?? stopped
                let more = try txn.dueDeliveries(now: now, from: start, scanLimit: Self.scanBudget / 2, choose: choose)
                found += more.found
                next = more.next
            }
            var jobs = [DeliveryJob](), skipped = [DeliveryRecord]()
            for d in found {
                guard let target = endpoints[d.endpointID] ?? nil, target.isActive else { skipped.append(d); continue }
                let body = WebhookSignature.body(d)
                jobs.append(DeliveryJob(endpointID: d.endpointID, organization: target.org, sequence: d.sequence,
                                        url: target.url,
                                        headers: WebhookSignature.headers(secret: target.secret, eventID: d.eventID,
                                                                          timestamp: now.seconds, body: body),
                                        body: body, dueAt: d.nextAttemptAt))
            }
            return (jobs, skipped, next)
        }
        resume = next
        guard !candidates.isEmpty || !skipped.isEmpty else { return [] }
        return try store.write([.durable]) { txn -> [DeliveryJob] in
            for d in skipped {
                guard var current = try txn.delivery(endpoint: d.endpointID, sequence: d.sequence),
                      current.state == .pending else {
                    continue
                }
                let previous = current.nextAttemptAt
                current.state = .skipped
                current.nextAttemptAt = nil
                try txn.put(current, previousDue: previous)
            }
            var leased = [DeliveryJob]()
            for job in candidates {
                guard var current = try txn.delivery(endpoint: job.endpointID, sequence: job.sequence),
                      current.state == .pending, current.nextAttemptAt == job.dueAt else { continue }
                let until = now + Int64(leaseSeconds)
                current.nextAttemptAt = until
                try txn.put(current, previousDue: job.dueAt)
                leased.append(DeliveryJob(endpointID: job.endpointID, organization: job.organization,
                                          sequence: job.sequence, url: job.url, headers: job.headers,
                                          body: job.body, dueAt: until))
            }
            return leased
        }
    }

    /// Removes up to `limit` finished deliveries created before `cutoff` (the delivery log's
    /// retention, `webhooks.logRetentionDays`), oldest first within each endpoint; how many.
    /// Found by a read, removed by one write that checks each is still finished, so an idle
    /// log costs no write transaction.
    @discardableResult
    public func prune(createdBefore cutoff: Timestamp, limit: Int) throws -> Int {
        let expired = try store.read { txn -> [[UInt8]] in
            var keys = [[UInt8]]()
            for endpoint in try txn.webhooks() where keys.count < limit {
                keys += try txn.expiredDeliveries(endpoint: endpoint.id, createdBefore: cutoff,
                                                  limit: limit - keys.count)
            }
            return keys
        }
        guard !expired.isEmpty else { return 0 }
        return try store.write([.durable]) { txn in
            var removed = 0
            var orgs = [String: String?](), counts = [String: WebhookCountRecord]()
            for key in expired {
                let endpoint = DeliveryRecord.endpointID(ofKey: key), sequence = BigEndian.uint64(key.suffix(8))
                guard let d = try txn.delivery(endpoint: endpoint, sequence: sequence), d.state != .pending else {
                    continue
                }
                if orgs[endpoint] == nil { orgs[endpoint] = .some(try txn.webhook(id: endpoint)?.org) }
                if let org = orgs[endpoint] ?? nil {
                    // Read before this transaction removes any of the organization's deliveries.
                    var count = try counts[org] ?? txn.webhookCount(org: org)
                    count.remove(1)
                    counts[org] = count
                }
                try txn.delete(d)
                removed += 1
            }
            for (org, count) in counts { try txn.put(count, org: org) }
            return removed
        }
    }

    /// Records attempts in one write transaction: 2xx → delivered; otherwise the next retry
    /// from `retrySchedule`, or failed after the last. Returns how many were delivered.
    @discardableResult
    public func record(_ results: [(DeliveryJob, AttemptResult)], at now: Timestamp) throws -> Int {
        guard !results.isEmpty else { return 0 }
        return try store.write([.durable]) { txn in
            var delivered = 0
            for (job, result) in results {
                // Deleted meanwhile (its endpoint removed), or recorded already: nothing to do.
                guard var d = try txn.delivery(endpoint: job.endpointID, sequence: job.sequence),
                      d.state == .pending else {
                    continue
                }
                let previous = d.nextAttemptAt
                d.attempts.append(.init(at: now - Int64(result.durationMs / 1000),
                                        status: UInt16(clamping: result.status),
                                        durationMs: UInt32(clamping: result.durationMs), error: result.error,
                                        excerpt: result.excerpt))
                if result.succeeded {
                    d.state = .delivered
                    d.nextAttemptAt = nil
                    delivered += 1
                } else if d.attempts.count <= retrySchedule.count {
                    d.nextAttemptAt = now + Int64(retrySchedule[d.attempts.count - 1])
                } else {
                    d.state = .failed
                    d.nextAttemptAt = nil
                }
                try txn.put(d, previousDue: previous)
            }
            return delivered
        }
    }
}
