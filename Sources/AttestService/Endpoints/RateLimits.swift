import AttestConfig
import AttestCore
import AttestStore
import FastCGI

/// Fixed-minute rate windows in the ephemeral `rates` database, charged by device requests
/// (`Admission`) and by the webhook management API (`WebhookAPILimits`):
///
/// ```
/// rates  window end ‖ bucket name  →  hits in that minute
/// ```
/// and the sweep of expired windows and used challenges that rides on those writes.
enum RateLimits {
    static let rateWindowSeconds: Int64 = 60

    /// Expired rate windows and used challenges are swept by one ephemeral write in
    /// `sweepInterval` of each process, up to `sweepLimit` entries of each: on average 4 a
    /// write, as when every write swept 4, but the other writes no longer rewrite the oldest
    /// leaf page (LMDB) or run two DELETEs (PostgreSQL). A process's first write sweeps.
    static let sweepInterval = 16, sweepLimit = 64

    /// Counts one more occasion to sweep in `occasions` and tells whether this one sweeps:
    /// the first, then every `sweepInterval`-th (the expired entries here, past months'
    /// counted devices in `MonthlyCounter.sweepCountedDevicesIfDue`).
    static func sweepDue(_ occasions: inout Int) -> Bool {
        defer { occasions += 1 }
        return occasions % sweepInterval == 0
    }

    static func sweepExpiredIfDue(in txn: Transaction, now: Timestamp, _ ctx: ServiceContext) throws {
        guard sweepDue(&ctx.caches.ephemeralWrites) else { return }
        try txn.sweepExpired(.rates, now: now.seconds, limit: Self.sweepLimit)
        try txn.sweepExpired(.challenges, now: now.seconds, limit: Self.sweepLimit)
    }

    /// The client IP's bucket for `endpoint` (`rateLimits.validatePerIPPerMinute`,
    /// `rateLimits.refreshPerIPPerMinute`); `nil` when that limit is off or the address unknown.
    static func ipBucket(_ request: Request, _ endpoint: DeviceEndpoint,
                         _ configuration: Configuration) -> (name: String, limit: UInt32)? {
        let limit = UInt32(endpoint == .validate
                           ? configuration.validatePerIPPerMinute : configuration.refreshPerIPPerMinute)
        let ip = request.remoteAddress
        guard limit > 0, !ip.isEmpty else { return nil }
        return (endpoint.rawValue + "-ip:" + IPAddress.rateLimitKey(ip), limit)
    }

    /// What charging found: the first bucket over its limit, if any, and the bucket with the
    /// fewest requests left.
    struct Charged {
        var over: (String, UInt32)?
        var tightest: (limit: UInt32, remaining: UInt32)?
    }

    /// Counts one hit in each bucket in order, stopping at the first that is over its limit
    /// (so an IP over its limit does not also drain its organization's bucket).
    static func charge(_ buckets: [(name: String, limit: UInt32)], in txn: Transaction,
                       now: Timestamp) throws -> Charged {
        let windowEnd = Self.windowEnd(now)
        var result = Charged()
        for (name, limit) in buckets {
            let hits = try txn.hitRateWindow(name, windowEnd: windowEnd)
            if hits > limit { result.over = (name, limit); return result }
            let remaining = limit - hits
            if result.tightest.map({ remaining < $0.remaining }) ?? true { result.tightest = (limit, remaining) }
        }
        return result
    }

    static func headers(_ bucket: (limit: UInt32, remaining: UInt32)?, now: Timestamp) -> [Header] {
        guard let bucket else { return [] }
        return [Header("X-RateLimit-Limit", String(bucket.limit)),
                Header("X-RateLimit-Remaining", String(bucket.remaining)),
                Header("X-RateLimit-Reset", String(max(1, windowEnd(now) - now.seconds)))]
    }

    static func windowEnd(_ now: Timestamp) -> Int64 { (now.seconds / rateWindowSeconds + 1) * rateWindowSeconds }

    static func rateLimited(_ over: (String, UInt32), now: Timestamp, what: String = "requests",
                            hint: String = "Back off and retry after the Retry-After header's seconds.")
        -> ServiceError {
        ServiceMetrics.rateLimited(bucket: over.0)
        let retry = max(1, windowEnd(now) - now.seconds)
        return ServiceError(.rateLimited,
                            "Rate limit exceeded: at most \(over.1) \(what) per minute. Retry after \(retry) seconds.",
                            hint: hint,
                            log: "bucket \(over.0)",
                            headers: [("Retry-After", String(retry)), ("X-RateLimit-Limit", String(over.1)),
                                      ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retry))])
    }
}
