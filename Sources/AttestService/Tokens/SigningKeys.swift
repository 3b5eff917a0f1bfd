import AttestCore
import AttestStore

/// The token signing keys as a worker uses them: the signer active at the clock's time, the
/// once-a-second upkeep of the key files, and the preparation of signatures in quiet moments.
enum SigningKeys {
    /// The token signer active at the clock's time (`KeyRing.signer(at:)`).
    static func signer(_ ctx: ServiceContext) throws -> JWTSigner {
        let now = ctx.clock.now()
        maintain(at: now, ctx)
        return try ctx.keyRing.signer(at: now)
    }

    /// A quiet moment's step of token-signature preparation for the active key
    /// (`PreparedES256Signer`); whether more would help. No key, no work.
    static func prepareSignatures(_ ctx: ServiceContext) -> Bool {
        (try? ctx.keyRing.signer(at: ctx.clock.now()))?.prepareAhead() ?? false
    }

    /// Once per clock second (every request calls it): rereads keys/index.json when `attestctl
    /// keys rotate` changed it and applies the key transitions due (`KeyRing.publish`:
    /// jwks.json, retired private keys). Failures are logged, not thrown: requests go on with
    /// the keys already read.
    static func maintain(at now: Timestamp, _ ctx: ServiceContext) {
        guard now != ctx.caches.lastKeyCheck else { return }
        ctx.caches.lastKeyCheck = now
        do {
            try ctx.keyRing.reloadIfChanged()
            if try ctx.keyRing.publish(now: now) { ctx.log("keys: jwks.json and key files brought to \(now.iso8601)") }
        } catch {
            ctx.log("keys: \(error)")
        }
    }
}
