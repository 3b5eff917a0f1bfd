import AttestCore
import AttestStore

/// Single use of challenges, shared by validate and refresh.
///
/// A challenge is consumed by the first request that presents it authentically, whatever the
/// outcome of the rest: the id goes into `challenges` (NOOVERWRITE, so two requests racing
/// on one challenge cannot both win) inside the same write transaction as the request's
/// other changes, and a few expired entries are swept in passing.
extension ServiceContext {
    /// Authentic, unexpired and not yet consumed (a read; the write is `consume`).
    func checkChallenge(_ challenge: String, appID: String, now: Timestamp) throws -> ChallengeAuthority.Token {
        let token = try challenges.check(challenge, appID: appID, now: now)
        if try store.read({ try $0.isChallengeUsed(id: token.id, expiry: token.expiry.seconds) }) {
            throw ServiceError.challengeAlreadyUsed
        }
        return token
    }

    /// Consumes `token` inside `txn`; `false` when another request consumed it first.
    func consume(_ token: ChallengeAuthority.Token, in txn: Transaction, now: Timestamp) throws -> Bool {
        guard try txn.consumeChallenge(id: token.id, expiry: token.expiry.seconds) else { return false }
        try txn.sweepExpired(.challenges, now: now.seconds, limit: 4)
        return true
    }

    /// Consumes `token` on its own, for requests that fail after presenting it.
    func consumeAlone(_ token: ChallengeAuthority.Token, now: Timestamp) throws {
        _ = try store.write([.ephemeral]) { txn in try consume(token, in: txn, now: now) }
    }
}
