import AttestConfig
import AttestCore
import AttestStore

/// Console sign-in without stored passwords (docs/console.md, "Signing in"): attestctl makes a
/// one-time link for an organization and role; the link's page trades it for a session
/// (`ConsoleSessionEndpoint`), which `attestctl console logout` or the page's "Sign out" ends.
///
/// ```
/// link token   = base64url(32 random bytes); the store keeps SHA-256 of it (ConsoleLoginRecord)
/// link         = <console.url or the server's address>/console/login.html#<link token>
/// ```
/// The token rides in the URL's fragment: browsers never send a fragment, so it reaches no
/// access log, and a chat client unfurling the link (a GET) does not use it up.
public enum ConsoleSignIn {
    /// Longest name a link is made for (bytes).
    public static let nameLimit = 100

    /// Stores a new link for `org` and `role`, valid for `minutes`; returns its token.
    public static func makeLink(org: String, role: OrgRole, name: String, minutes: Int, store: Store,
                                random: any RandomSource, now: Timestamp, by actor: AuditActor) throws -> String {
        guard !name.isEmpty, name.utf8.count <= nameLimit, !name.contains(where: { $0.isNewline }) else {
            throw ServiceError(.badRequest, "The name must be 1 to \(nameLimit) bytes on one line.")
        }
        let token = Base64.encode(random.bytes(32), url: true)
        try store.write { txn in
            guard try txn.org(named: org) != nil else { throw ServiceError(.notFound, "No organization '\(org)'.") }
            try txn.put(ConsoleLoginRecord(org: org, role: role, name: name, createdAt: now,
                                           expiresAt: now + Int64(minutes) * 60),
                        tokenHash: SHA256.hash(token.utf8))
            try OrgAudit.record(actor, org: org, action: "console.link", target: name,
                                detail: "\(role.name), valid \(minutes) min", at: now, in: txn)
        }
        return token
    }

    /// Uses the link `token` once: its session and the cookie token that names it. 401 for an
    /// unknown, used or expired link, or an organization that is gone.
    public static func exchange(_ token: String, store: Store, random: any RandomSource, now: Timestamp,
                                sessionSeconds: Int64,
                                _ configuration: Configuration) throws -> (ConsoleSessionRecord, String) {
        guard token.utf8.count == 43, let raw = Base64.decode(token), raw.count == 32 else {
            throw ServiceError(.unauthorized, "This is not a console sign-in link.")
        }
        let id = random.bytes(16), secret = random.bytes(32)
        let session = try store.write { txn -> ConsoleSessionRecord in
            guard let login = try txn.takeConsoleLogin(tokenHash: SHA256.hash(token.utf8)) else {
                throw ServiceError(.unauthorized, "This sign-in link was used already or was never made.",
                                   hint: "Ask for a new one: attestctl console login --org NAME.")
            }
            guard now < login.expiresAt else {
                throw ServiceError(.unauthorized, "This sign-in link expired at \(login.expiresAt.iso8601).",
                                   hint: "Ask for a new one: attestctl console login --org NAME.")
            }
            guard try txn.org(named: login.org) != nil else {
                throw ServiceError(.unauthorized, "The organization of this sign-in link is gone.")
            }
            let session = ConsoleSessionRecord(id: id, org: login.org, role: login.role, name: login.name,
                                               secretHash: SHA256.hash(secret), csrf: random.bytes(32),
                                               createdAt: now, expiresAt: now + sessionSeconds)
            try txn.put(session)
            let actor = AuditActor(kind: .session, id: session.idHex, name: session.name, role: session.role,
                                   configuration)
            try OrgAudit.record(actor, org: login.org, action: "console.sign_in", target: session.idHex,
                                detail: "\(login.role.name) until \(session.expiresAt.iso8601)", at: now, in: txn)
            // Sessions and links expired a week ago go (the table stays as small as its use).
            try txn.sweepConsole(now: now, keepSeconds: 7 * 86_400)
            return session
        }
        // A refused link stays as it was (the write rolled back): an expired one is refused
        // every time until the sweep deletes it.
        return (session, ConsoleCookie.token(id: id, secret: secret))
    }

    /// Ends the session `id` (hex) at `now`; false when there is no live session of that id
    /// (of `org`, when given).
    @discardableResult
    public static func end(idHex: String, org: String? = nil, store: Store, now: Timestamp,
                           by actor: AuditActor) throws -> Bool {
        guard let id = Hex.decode(idHex), id.count == 16 else {
            throw ServiceError(.badRequest, "A session id is 32 hex digits.")
        }
        return try store.write { txn in
            guard var session = try txn.consoleSession(id: id), session.isLive(at: now),
                  org == nil || session.org == org else { return false }
            session.endedAt = now
            try txn.put(session)
            try OrgAudit.record(actor, org: session.org, action: "console.sign_out", target: session.idHex,
                                detail: session.name, at: now, in: txn)
            return true
        }
    }

    /// Deletes `org`'s unused sign-in links (`console logout --org --all`); returns how many.
    @discardableResult
    public static func voidLinks(org: String, store: Store, now: Timestamp, by actor: AuditActor) throws -> Int {
        try store.write { txn in
            let links = try txn.consoleLogins().filter { $0.login.org == org }
            for link in links { _ = try txn.takeConsoleLogin(tokenHash: link.hash) }
            if !links.isEmpty {
                try OrgAudit.record(actor, org: org, action: "console.void_links", target: org,
                                    detail: "\(links.count) unused link(s)", at: now, in: txn)
            }
            return links.count
        }
    }
}
