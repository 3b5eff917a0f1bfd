import AttestCore
import AttestStore
import FastCGI

/// Rate limits and single use of challenges for validate and refresh, in the order that keeps
/// outsiders from hurting a tenant (docs/api.md, "Decisions"):
///
/// 1. Everything up to and including the challenge's HMAC check needs no store. A request that
///    fails there (unknown app, bad JSON, a forged or expired challenge, …) charges only the
///    client IP's bucket for its endpoint (`rateLimits.validatePerIPPerMinute`,
///    `rateLimits.refreshPerIPPerMinute`), and is answered 429 instead once that is exhausted.
/// 2. A request that presents an authentic challenge makes one ephemeral write, before any
///    signature is checked: it charges its IP bucket, then (if the IP is within its limit) the
///    organization's bucket shared by validate and refresh, and consumes the challenge
///    (NOOVERWRITE: of two requests racing on one challenge exactly one wins). The challenge is
///    consumed whatever the outcome of the rest, 429 included.
///
/// Windows are fixed minutes in the ephemeral `rates` database. Every validate and refresh
/// answer carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`
/// (seconds until the window ends) of the most constrained bucket it was charged to (none
/// when no limit applies); a 429 adds `Retry-After` (the same seconds). A used challenge's id is kept `challenge.usedRetentionSeconds`
/// past its expiry, so a wall clock stepping back by up to that much cannot revive it.
enum DeviceEndpoint: String {
    case validate, refresh
}

extension ServiceContext {
    static let rateWindowSeconds: Int64 = 60

    func perIPLimit(_ endpoint: DeviceEndpoint) -> UInt32 {
        UInt32(endpoint == .validate ? configuration.validatePerIPPerMinute : configuration.refreshPerIPPerMinute)
    }

    /// Runs the unauthenticated part of a request; a failure charges the client IP's bucket and
    /// becomes 429 when that bucket is exhausted (a charge that fails keeps the first error).
    func unauthenticated<T>(_ request: Request, _ endpoint: DeviceEndpoint, now: Timestamp, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            let bucket = ipBucket(request, endpoint)
            guard let bucket else { throw error }
            let charged = try? store.write([.ephemeral]) { txn in
                try sweepExpiredIfDue(in: txn, now: now)
                return try charge([bucket], in: txn, now: now)
            }
            if let charged {
                if let over = charged.over { throw rateLimited(over, now: now) }
                rateHeaders = Self.headers(charged.tightest, now: now)
            }
            throw error
        }
    }

    /// Checks a challenge's authenticity, app binding and expiry (`ChallengeAuthority`), and
    /// refuses, as expired, one that may have been issued before the store forgot the used
    /// challenges (`Store.ephemeralResetAt`: the machine restarted): it could have been used.
    func checkChallenge(_ challenge: String, appID: String, now: Timestamp) throws -> ChallengeAuthority.Token {
        let token = try challenges.check(challenge, appID: appID, now: now)
        let resetAt = store.ephemeralResetAt
        // A challenge issued within the reset's own second passes: the store's first open after
        // a reboot, or after a restore, cannot come within a second of a challenge used before
        // it. A version-1 challenge (older builds) does not say when it was issued: issued before
        // the reset ⇔ expiry < reset + TTL, exact unless the TTL was lowered across the restart.
        let issuedAfterReset = token.issued.map { $0.seconds >= resetAt }
            ?? (token.expiry.seconds >= resetAt + Int64(configuration.challengeTTLSeconds))
        guard resetAt == 0 || issuedAfterReset else {
            throw ServiceError(.challengeExpired,
                               "Challenge expired: it was issued before the server restarted. Request a new one from GET /api/v1/attestation/challenge.",
                               hint: "Request a fresh challenge immediately before attesting or asserting.",
                               log: "issued before the ephemeral store was reset at \(Timestamp(seconds: resetAt).iso8601)")
        }
        return token
    }

    /// Charges the buckets and consumes an authentic challenge in one ephemeral write, and
    /// runs `read` in the same transaction (a durable read, e.g. refresh's device: the
    /// request then makes one transaction before its signature work, not two). What `read`
    /// returns is used only when the request is admitted; it must not write. `prefetch` names
    /// the keys `read` will get (`Transaction.prefetch`): on PostgreSQL they go out with the
    /// first charge instead of in round trips of their own, as does the challenge's consumption.
    /// - Throws: 429 `rate_limited`, or `challenge_already_used`.
    func admit<T>(_ token: ChallengeAuthority.Token, org: OrgRecord, request: Request, _ endpoint: DeviceEndpoint, now: Timestamp,
                  prefetch: (Transaction) -> Void = { _ in }, then read: (Transaction) throws -> T) throws -> T {
        var buckets = [(name: String, limit: UInt32)]()
        if let ip = ipBucket(request, endpoint) { buckets.append(ip) }
        if org.ratePerMinute > 0 { buckets.append(("org:" + org.name, org.ratePerMinute)) }
        let retention = Int64(configuration.challengeUsedRetentionSeconds)
        // A failing `read` must not abort the charge and the consumption: it is rethrown after the commit.
        let (charged, fresh, value) = try store.write([.ephemeral]) { txn -> (Charged, Bool, Result<T, any Error>?) in
            // The consumption first: on PostgreSQL it goes out with the first charge.
            let consumed = try txn.consumeChallengeLater(id: token.id, expiry: token.expiry.seconds + retention)
            prefetch(txn)
            try sweepExpiredIfDue(in: txn, now: now)
            let charged = try charge(buckets, in: txn, now: now)
            let fresh = try consumed()
            return (charged, fresh, charged.over == nil && fresh ? Result { try read(txn) } : nil)
        }
        if let over = charged.over { throw rateLimited(over, now: now) }
        rateHeaders = Self.headers(charged.tightest, now: now)
        guard fresh, let value else { throw ServiceError.challengeAlreadyUsed }
        return try value.get()
    }

    /// Expired rate windows and used challenges are swept by one ephemeral write in
    /// `sweepInterval` of each process, up to `sweepLimit` entries of each: on average 4 a
    /// write, as when every write swept 4, but the other writes no longer rewrite the oldest
    /// leaf page (LMDB) or run two DELETEs (PostgreSQL). A process's first write sweeps.
    static let sweepInterval = 16, sweepLimit = 64

    /// Counts one more occasion to sweep in `occasions` and tells whether this one sweeps:
    /// the first, then every `sweepInterval`-th (the expired entries here, past months'
    /// counted devices in `sweepCountedDevicesIfDue`).
    static func sweepDue(_ occasions: inout Int) -> Bool {
        defer { occasions += 1 }
        return occasions % sweepInterval == 0
    }

    func sweepExpiredIfDue(in txn: Transaction, now: Timestamp) throws {
        guard Self.sweepDue(&ephemeralWrites) else { return }
        try txn.sweepExpired(.rates, now: now.seconds, limit: Self.sweepLimit)
        try txn.sweepExpired(.challenges, now: now.seconds, limit: Self.sweepLimit)
    }

    private func ipBucket(_ request: Request, _ endpoint: DeviceEndpoint) -> (name: String, limit: UInt32)? {
        let limit = perIPLimit(endpoint)
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
    func charge(_ buckets: [(name: String, limit: UInt32)], in txn: Transaction, now: Timestamp) throws -> Charged {
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

    private static func headers(_ bucket: (limit: UInt32, remaining: UInt32)?, now: Timestamp) -> [Header] {
        guard let bucket else { return [] }
        return [Header("X-RateLimit-Limit", String(bucket.limit)), Header("X-RateLimit-Remaining", String(bucket.remaining)),
                Header("X-RateLimit-Reset", String(max(1, windowEnd(now) - now.seconds)))]
    }

    static func windowEnd(_ now: Timestamp) -> Int64 { (now.seconds / rateWindowSeconds + 1) * rateWindowSeconds }

    func rateLimited(_ over: (String, UInt32), now: Timestamp, what: String = "requests",
                     hint: String = "Back off and retry after the Retry-After header's seconds.") -> ServiceError {
        let retry = max(1, Self.windowEnd(now) - now.seconds)
        return ServiceError(.rateLimited, "Rate limit exceeded: at most \(over.1) \(what) per minute. Retry after \(retry) seconds.",
                            hint: hint,
                            log: "bucket \(over.0)",
                            headers: [("Retry-After", String(retry)), ("X-RateLimit-Limit", String(over.1)),
                                      ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retry))])
    }
}
