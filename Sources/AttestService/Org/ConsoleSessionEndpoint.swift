import AttestCore
import AttestStore
import FastCGI

/// The console's session (docs/console.md, "Signing in"), served by the org pool:
///
/// ```
/// POST   /api/v1/console/session  → {"token": "<sign-in link token>"}
///                                 ← 201 {"session": session} + Set-Cookie (ConsoleCookie)
/// GET    /api/v1/console/session  (cookie)                 ← 200 {"session": session}
/// DELETE /api/v1/console/session  (cookie + X-CSRF-Token)   ← 200 {"ended": true} + the cookie cleared
///
/// session = {"id" (32 hex), "org", "role": viewer|editor|admin, "name", "csrf" (base64url, 32 bytes),
///            "created_at", "expires_at"}
/// ```
/// A link that is unknown, used or expired is 401; so is a GET or DELETE without a live
/// session. A sign-in or sign-out whose `Origin` is another site is 403 (login CSRF). The
/// CSRF token is only ever given to the session's own page (this answer is not
/// readable cross-origin: no CORS headers are sent).
public enum ConsoleSessionEndpoint {
    public static let path = "/api/v1/console/session"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        switch request.method {
        case "POST":
            try ConsoleCookie.checkOrigin(request, log: "console sign-in")
            let body = try JSONBody(request)
            guard let token = try body.string("token") else {
                throw ServiceError(.badRequest, "The field token is required.")
            }
            let seconds = Int64(ctx.configuration.consoleSessionHours) * 3600
            let (session, cookie) = try ConsoleSignIn.exchange(token, store: ctx.store, random: ctx.random, now: now,
                                                                 sessionSeconds: seconds, ctx.configuration)
            return .json(201, JSONValue.object([("session", json(session))]).jsonText,
                         headers: [Header("Cache-Control", "no-store"), ConsoleCookie.setting(cookie, maxAge: seconds)])
        case "GET", "DELETE":
            guard let token = ConsoleCookie.token(request),
                  let session = try ctx.store.read({ try ConsoleCookie.session(token, in: $0) }),
                  session.isLive(at: now) else {
                throw ServiceError(.unauthorized, "No console session: sign in again.",
                                   hint: "attestctl console login --org NAME prints a sign-in link.")
            }
            if request.method == "GET" { return ServiceContext.json(["session": json(session)]) }
            try ConsoleCookie.checkChange(request, session: session)
            let actor = AuditActor(kind: .session, id: session.idHex, name: session.name, role: session.role,
                                   ctx.configuration)
            try ConsoleSignIn.end(idHex: session.idHex, store: ctx.store, now: now, by: actor)
            return .json(200, JSONValue.object([("ended", true)]).jsonText,
                         headers: [Header("Cache-Control", "no-store"), ConsoleCookie.clearing])
        default:
            throw ServiceError(.methodNotAllowed, "Use POST, GET or DELETE for \(path).")
        }
    }

    /// A session as this endpoint answers it.
    static func json(_ s: ConsoleSessionRecord) -> JSONValue {
        .object([("id", .string(s.idHex)), ("org", .string(s.org)), ("role", .string(s.role.name)),
                 ("name", .string(s.name)), ("csrf", .string(Base64.encode(s.csrf, url: true))),
                 ("created_at", .string(s.createdAt.iso8601)), ("expires_at", .string(s.expiresAt.iso8601))])
    }
}
