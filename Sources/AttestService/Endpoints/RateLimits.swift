import AttestCore
import AttestStore

/// Fixed one-minute windows in the ephemeral store: the organization's bucket, shared by
/// validate and refresh, and validate's per-IP limit. A 429 carries `Retry-After` and
/// `X-RateLimit-Reset` both in seconds from now (as nginx's own 429 does), `X-RateLimit-Limit`
/// and `X-RateLimit-Remaining`.
extension ServiceContext {
    static let rateWindowSeconds: Int64 = 60

    func enforceRateLimits(org: OrgRecord, clientIP: String?, now: Timestamp) throws {
        let perIP = clientIP.flatMap { $0.isEmpty ? nil : $0 }.map { (bucket: "ip:" + $0, limit: UInt32(configuration.validatePerIPPerMinute)) }
        var buckets = [(bucket: String, limit: UInt32)]()
        if org.ratePerMinute > 0 { buckets.append(("org:" + org.name, org.ratePerMinute)) }
        if let perIP, perIP.limit > 0 { buckets.append(perIP) }
        guard !buckets.isEmpty else { return }
        let windowEnd = (now.seconds / Self.rateWindowSeconds + 1) * Self.rateWindowSeconds
        let exceeded: (String, UInt32)? = try store.write([.ephemeral]) { txn in
            try txn.sweepExpired(.rates, now: now.seconds, limit: 4)
            var over: (String, UInt32)? = nil
            for (bucket, limit) in buckets {
                let hits = try txn.hitRateWindow(bucket, windowEnd: windowEnd)
                if hits > limit, over == nil { over = (bucket, limit) }
            }
            return over
        }
        if let (bucket, limit) = exceeded {
            let retry = max(1, windowEnd - now.seconds)
            throw ServiceError(.rateLimited, "Rate limit exceeded: at most \(limit) requests per minute. Retry after \(retry) seconds.",
                               hint: "Back off and retry after the Retry-After header's seconds.",
                               log: "bucket \(bucket)",
                               headers: [("Retry-After", String(retry)), ("X-RateLimit-Limit", String(limit)),
                                         ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retry))])
        }
    }
}
