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
    static func challenge(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        guard request.method == "GET" || request.method == "HEAD" else {
            throw ServiceError(.methodNotAllowed, "Use GET for /api/v1/attestation/challenge.")
        }
        let app = try AppLookup.app(for: request, required: false, ctx)
        let now = ctx.clock.now()
        let ttl = Int64(ctx.configuration.challengeTTLSeconds)
        let expiry = now + ttl
        let challenge = ctx.challenges.issue(appID: app?.app.appID, issued: now, expiry: expiry,
                                             id: ctx.random.bytes(16))
        return Response(status: 200,
                        headers: [Header("Content-Type", "application/json"), Header("Cache-Control", "no-store")],
                        body: body(challenge: challenge, expiry: expiry, ttl: ttl))
    }

    /// The 200 body, written in one allocation (every part is base64url, digits or ISO 8601:
    /// nothing needs JSON escaping).
    static func body(challenge: String, expiry: Timestamp, ttl: Int64) -> [UInt8] {
        var challenge = challenge
        return challenge.withUTF8 { token in
            [UInt8](unsafeUninitializedCapacity: 96 + token.count) { out, count in
                var at = 0
                func copy(_ bytes: UnsafeRawPointer, _ n: Int) {
                    UnsafeMutableRawPointer(out.baseAddress! + at).copyMemory(from: bytes, byteCount: n)
                    at += n
                }
                func put(_ text: StaticString) { copy(text.utf8Start, text.utf8CodeUnitCount) }
                put(#"{"challenge":""#)
                copy(token.baseAddress!, token.count)
                put(#"","expiresAt":""#)
                var written = expiry.writeISO8601(into: UnsafeMutableBufferPointer(rebasing: out[at...]))
                if written == 0 {
                    // A clock beyond year 9999: the long form, still digits and signs.
                    written = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: expiry.iso8601.utf8).1
                }
                at += written
                put(#"","expiresIn":"#)
                at += UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: String(ttl).utf8).1
                out[at] = UInt8(ascii: "}")
                count = at + 1
            }
        }
    }
}
