import AttestStore

/// What an org API call needs of its caller: `read` (any role), `edit` (flags, release notes,
/// feature requests, tickets: editor or admin), `admin` (API keys, webhooks, devices).
public enum OrgNeed: Sendable {
    case read, edit, admin

    /// The least role that may make such a call.
    public var role: OrgRole {
        switch self {
        case .read: return .viewer
        case .edit: return .editor
        case .admin: return .admin
        }
    }

    /// `read` for GET and HEAD, `write` for anything else: most org API families read freely
    /// and change at one level (`edit` or `admin`).
    public static func of(_ method: String, write: OrgNeed) -> OrgNeed {
        method == "GET" || method == "HEAD" ? .read : write
    }
}
