import AttestCore
import AttestStore
import FastCGI

/// Who is calling an organization-scoped API (`/api/v1/org/…`), found once for every such
/// call: the one place org API credentials are read and roles are judged.
///
/// Credentials, either:
/// - `Authorization: Bearer aat_…`, an API key of scope `all`: the key's organization, role
///   `admin` (a `heartbeat` key is 403);
/// - the console's session cookie `__Host-attestedge_console` (`ConsoleCookie`): the session's
///   organization and role. A call that changes anything (any method but GET and HEAD) must
///   also carry the session's CSRF token in `X-CSRF-Token`, and an `Origin`, when the browser
///   sends one, of this host: otherwise 403 `forbidden`.
///
/// No credential (or an unknown, revoked, ended or expired one) is 401 `unauthorized`; a role
/// below what the call needs is 403 `forbidden` naming both. The organization comes from the
/// credential alone: nothing in the request names it, so another organization's data is
/// unreachable by construction (its ids are then simply not found).
public struct OrgCaller: Sendable {
    public let org: OrgRecord
    public let role: OrgRole
    /// Who, for the audit log and refusals.
    public let actor: AuditActor

    public init(org: OrgRecord, role: OrgRole, actor: AuditActor) {
        self.org = org
        self.role = role
        self.actor = actor
    }

    /// The caller of `request`, refused unless its role covers `need`.
    public static func authenticate(_ request: Request, _ need: OrgNeed, _ ctx: ServiceContext) throws -> OrgCaller {
        let config = ctx.configuration
        if let key = APIKeys.bearer(request) {
            let (org, record) = try APIKeys.holder(apiKey: key, for: .management, ctx)
            let caller = OrgCaller(org: org, role: .admin, actor: AuditActor(kind: .apiKey, id: record.id,
                                                                           name: record.name, role: .admin, config))
            try caller.require(need)
            return caller
        }
        guard let token = ConsoleCookie.token(request) else {
            throw ServiceError(.unauthorized,
                               "Sign in to the console, or send an organization API key: "
                                   + "Authorization: Bearer aat_….",
                               hint: "attestctl console login --org NAME prints a sign-in link.")
        }
        let now = ctx.clock.now()
        let found = try ctx.store.read { txn -> (ConsoleSessionRecord, OrgRecord)? in
            guard let session = try ConsoleCookie.session(token, in: txn), session.isLive(at: now),
                  let org = try txn.org(named: session.org) else { return nil }
            return (session, org)
        }
        guard let (session, org) = found else {
            throw ServiceError(.unauthorized, "This console session has ended or expired: sign in again.",
                               hint: "attestctl console login --org NAME prints a sign-in link.")
        }
        if !(request.method == "GET" || request.method == "HEAD") {
            try ConsoleCookie.checkChange(request, session: session)
        }
        let caller = OrgCaller(org: org, role: session.role,
                               actor: AuditActor(kind: .session, id: session.idHex, name: session.name,
                                                 role: session.role, config))
        try caller.require(need)
        return caller
    }

    /// 403 unless this caller's role covers `need`.
    public func require(_ need: OrgNeed) throws {
        guard role >= need.role else {
            throw ServiceError(.forbidden, "This needs the \(need.role.name) role; you are signed in as \(role.name).",
                               hint: "Ask for a sign-in link with --role \(need.role.name).",
                               log: "\(actor.kind.name) \(actor.id) of role \(role.name) refused a call needing "
                                   + need.role.name)
        }
    }
}
