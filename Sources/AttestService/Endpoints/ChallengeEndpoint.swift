import AttestCore
import FastCGI

/// `GET /api/v1/attestation/challenge`
///
/// ```
/// 200 {"challenge": "<56 base64url characters>", "expiresAt": "2026-04-21T12:05:00Z", "expiresIn": 300}
/// ```
/// With `X-Bundle-ID` and `X-Team-ID` the challenge is bound to that app (unknown app → 403
/// `app_not_registered`); without them it is unbound. Nothing is written to the store.
public enum ChallengeEndpoint {
    public static func handle(_ request: Request, _ ctx: ServiceContext) -> Response {
        ctx.respond(request, endpoint: "challenge") {
            guard request.method == "GET" || request.method == "HEAD" else {
                throw ServiceError(.methodNotAllowed, "Use GET for /api/v1/attestation/challenge.")
            }
            let app = try ctx.store.read { txn in try ctx.appContext(request, in: txn, required: false) }
            let now = ctx.clock.now()
            let ttl = Int64(ctx.configuration.challengeTTLSeconds)
            let expiry = now + ttl
            let challenge = ctx.challenges.issue(appID: app?.app.appID, expiry: expiry, id: ctx.random.bytes(16))
            return ServiceContext.json(["challenge": .string(challenge), "expiresAt": .string(expiry.iso8601), "expiresIn": .int(ttl)])
        }
    }
}
