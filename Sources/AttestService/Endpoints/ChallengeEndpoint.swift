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
            let app = try ctx.appContext(request, required: false)
            let now = ctx.clock.now()
            let ttl = Int64(ctx.configuration.challengeTTLSeconds)
            let expiry = now + ttl
            let challenge = ctx.challenges.issue(appID: app?.app.appID, issued: now, expiry: expiry, id: ctx.random.bytes(16))
            // Every part is base64url, digits or ISO 8601: nothing needs JSON escaping.
            var body = [UInt8]()
            body.reserveCapacity(128)
            body += #"{"challenge":""#.utf8
            body += challenge.utf8
            body += #"","expiresAt":""#.utf8
            body += expiry.iso8601.utf8
            body += #"","expiresIn":"#.utf8
            body += String(ttl).utf8
            body.append(UInt8(ascii: "}"))
            return Response(status: 200, headers: [Header("Content-Type", "application/json"), Header("Cache-Control", "no-store")], body: body)
        }
    }
}
