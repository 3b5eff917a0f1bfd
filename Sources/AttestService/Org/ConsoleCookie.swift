import AttestCore
import AttestStore
import FastCGI

/// The console's session cookie and the checks on a change made with it.
///
/// ```
/// Set-Cookie: __Host-attestedge_console=<token>; Path=/; Max-Age=<s>; HttpOnly; Secure; SameSite=Strict
/// token = base64url(session id (16) ‖ secret (32))         (64 characters)
/// ```
/// `__Host-` makes browsers refuse the cookie unless it is Secure, for `/` and without a
/// Domain (no sibling host can set or shadow it). Browsers keep Secure cookies from HTTPS
/// sites and from loopback (http://127.0.0.1, http://localhost) only: the console needs HTTPS
/// anywhere else. The store keeps SHA-256 of the secret (`ConsoleSessionRecord`).
public enum ConsoleCookie {
    public static let name = "__Host-attestedge_console"
    /// The header a change carries the session's CSRF token in.
    public static let csrfHeader = "HTTP_X_CSRF_TOKEN"

    /// The cookie's token in `request`'s Cookie header; nil when absent or not 64 characters.
    static func token(_ request: Request) -> String? {
        guard let header = request.params["HTTP_COOKIE"] else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.drop(while: { $0 == " " })
            guard pair.hasPrefix(name + "=") else { continue }
            let value = String(pair.dropFirst(name.count + 1))
            return value.utf8.count == 64 ? value : nil
        }
        return nil
    }

    /// A new cookie token for `id` and `secret`.
    static func token(id: [UInt8], secret: [UInt8]) -> String { Base64.encode(id + secret, url: true) }

    /// The session `token` names, when its secret matches (compared in constant time); nil
    /// otherwise. Ended or expired sessions are returned: the caller judges them.
    static func session(_ token: String, in txn: Transaction) throws -> ConsoleSessionRecord? {
        guard let bytes = Base64.decode(token), bytes.count == 48 else { return nil }
        guard let session = try txn.consoleSession(id: Array(bytes[..<16])),
              constantTimeEqual(session.secretHash, SHA256.hash(bytes[16...])) else { return nil }
        return session
    }

    /// 403 unless a change made with `session` carries its CSRF token and, when the browser
    /// names the page's origin, comes from this host (`Origin` against `Host`).
    static func checkChange(_ request: Request, session: ConsoleSessionRecord) throws {
        let sent = request.params[csrfHeader].flatMap { Base64.decode($0) } ?? []
        guard sent.count == 32, constantTimeEqual(sent, session.csrf) else {
            throw ServiceError(.forbidden, "A change needs this session's CSRF token in X-CSRF-Token.",
                               hint: "Reload the console page.",
                               log: "console session \(session.idHex): change without its CSRF token")
        }
        try checkOrigin(request, log: "console session \(session.idHex)")
    }

    /// 403 when the browser names the page's origin (`Origin`, sent with every cross-origin
    /// request and every POST) and it is not this host: another site's page may not change
    /// anything, nor sign a browser in to a session of its choosing (login CSRF).
    static func checkOrigin(_ request: Request, log: String) throws {
        guard let origin = request.params["HTTP_ORIGIN"] else { return }
        let host = request.params["HTTP_HOST"] ?? ""
        guard host.isEmpty || (origin != "https://" + host && origin != "http://" + host) else { return }
        throw ServiceError(.forbidden, "This must come from this host's console page.",
                           log: "\(log): Origin \(origin.prefix(100)) to Host \(host.prefix(100))")
    }

    /// The Set-Cookie header that stores `token` for `maxAge` seconds.
    static func setting(_ token: String, maxAge: Int64) -> Header {
        Header("Set-Cookie", "\(name)=\(token); Path=/; Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Strict")
    }

    /// The Set-Cookie header that removes the cookie.
    static var clearing: Header {
        Header("Set-Cookie", "\(name)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict")
    }
}
