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
/// when no limit applies); a 429 adds `Retry-After` (the same seconds). A used challenge's id
/// is kept `challenge.usedRetentionSeconds` past its expiry, so a wall clock stepping back by
/// up to that much cannot revive it.
enum Admission {
    /// Runs the unauthenticated part of a request; a failure charges the client IP's bucket and
    /// becomes 429 when that bucket is exhausted (a charge that fails keeps the first error).
    static func unauthenticated<T>(_ request: Request, _ endpoint: DeviceEndpoint, now: Timestamp,
                                   _ ctx: ServiceContext, _ scope: inout RequestScope,
                                   _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            let bucket = RateLimits.ipBucket(request, endpoint, ctx.configuration)
            guard let bucket else { throw error }
            let charged = try? ctx.store.write([.ephemeral]) { txn in
                try RateLimits.sweepExpiredIfDue(in: txn, now: now, ctx)
                return try RateLimits.charge([bucket], in: txn, now: now)
            }
            if let charged {
                if let over = charged.over { throw RateLimits.rateLimited(over, now: now) }
                scope.rateHeaders = RateLimits.headers(charged.tightest, now: now)
            }
            throw error
        }
    }

    /// Checks a challenge's authenticity, app binding and expiry (`ChallengeAuthority`), and
    /// refuses, as expired, one that may have been issued before the store forgot the used
    /// challenges (`Store.ephemeralResetAt`: the machine restarted): it could have been used.
    static func checkChallenge(_ challenge: String, appID: String, now: Timestamp,
                               _ ctx: ServiceContext) throws -> ChallengeAuthority.Token {
        let token = try ctx.challenges.check(challenge, appID: appID, now: now)
        let resetAt = ctx.store.ephemeralResetAt
        // A challenge issued within the reset's own second passes: the store's first open after
        // a reboot, or after a restore, cannot come within a second of a challenge used before
        // it. A version-1 challenge (older builds) does not say when it was issued: issued before
        // the reset ⇔ expiry < reset + TTL, exact unless the TTL was lowered across the restart.
        let issuedAfterReset = token.issued.map { $0.seconds >= resetAt }
            ?? (token.expiry.seconds >= resetAt + Int64(ctx.configuration.challengeTTLSeconds))
        guard resetAt == 0 || issuedAfterReset else {
            throw ServiceError(.challengeExpired,
                               "Challenge expired: it was issued before the server restarted. "
                               + "Request a new one from GET /api/v1/attestation/challenge.",
                               hint: "Request a fresh challenge immediately before attesting or asserting.",
                               log: "issued before the ephemeral store was reset at "
                                    + "\(Timestamp(seconds: resetAt).iso8601)")
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
    static func admit<T>(_ token: ChallengeAuthority.Token, org: OrgRecord, request: Request,
                         _ endpoint: DeviceEndpoint, now: Timestamp, _ ctx: ServiceContext, _ scope: inout RequestScope,
                         prefetch: (Transaction) -> Void = { _ in }, then read: (Transaction) throws -> T) throws -> T {
        #if ATTEST_ABLATE
        if Ablation.has("no-admit") { return try ctx.store.read { try read($0) } }
        #endif
        var buckets = [(name: String, limit: UInt32)]()
        if let ip = RateLimits.ipBucket(request, endpoint, ctx.configuration) { buckets.append(ip) }
        if org.ratePerMinute > 0 { buckets.append(("org:" + org.name, org.ratePerMinute)) }
        let retention = Int64(ctx.configuration.challengeUsedRetentionSeconds)
        // A failing `read` must not abort the charge and the consumption: it is rethrown after the commit.
        typealias Admitted = (RateLimits.Charged, Bool, Result<T, any Error>?)
        let (charged, fresh, value) = try ctx.store.write([.ephemeral]) { txn -> Admitted in
            // The consumption first: on PostgreSQL it goes out with the first charge.
            let consumed = try txn.consumeChallengeLater(id: token.id, expiry: token.expiry.seconds + retention)
            prefetch(txn)
            try RateLimits.sweepExpiredIfDue(in: txn, now: now, ctx)
            let charged = try RateLimits.charge(buckets, in: txn, now: now)
            let fresh = try consumed()
            return (charged, fresh, charged.over == nil && fresh ? Result { try read(txn) } : nil)
        }
        if let over = charged.over { throw RateLimits.rateLimited(over, now: now) }
        scope.rateHeaders = RateLimits.headers(charged.tightest, now: now)
        guard fresh, let value else { throw ServiceError.challengeAlreadyUsed }
        return try value.get()
    }
}

/// The device requests admission charges, each with its own per-IP limit.
enum DeviceEndpoint: String {
    case validate, refresh
}
