import AttestCore
import AttestStore
import FastCGI

/// Who is calling an organization-scoped API (`/api/v1/org/…`), found once for every such
/// call: the one place org API credentials are read and roles are judged.
///
/// Credentials:
/// - `Authorization: Bearer aat_…`, an API key of scope `all`: the key's organization, role
///   `admin` (a `heartbeat` key is 403);
///
/// A call without credentials is 401 `unauthorized`; a role below what the call needs is 403
/// `forbidden` naming both. The organization comes from the credential alone: nothing in the
/// request names it, so another organization's data is unreachable by construction.
public struct OrgCaller: Sendable {
    public let org: OrgRecord
    public let role: OrgRole
    /// The API key's id (`aat_…`, 12 characters).
    public let credential: String

    /// The caller of `request`, refused unless its role covers `need`.
    public static func authenticate(_ request: Request, _ need: OrgNeed, _ ctx: ServiceContext) throws -> OrgCaller {
        guard let key = APIKeys.bearer(request) else {
            throw ServiceError(.unauthorized, "An organization API key is required: Authorization: Bearer aat_….")
        }
        let org = try APIKeys.organization(apiKey: key, for: .management, ctx)
        let caller = OrgCaller(org: org, role: .admin, credential: String(key.prefix(APIKeys.idLength)))
        try caller.require(need)
        return caller
    }

    /// 403 unless this caller's role covers `need`.
    public func require(_ need: OrgNeed) throws {
        guard role >= need.role else {
            throw ServiceError(.forbidden, "This needs the \(need.role.name) role; this session is \(role.name).",
                               hint: "Ask for a sign-in link with --role \(need.role.name).",
                               log: "\(credential) of role \(role.name) refused a call needing \(need.role.name)")
        }
    }
}
