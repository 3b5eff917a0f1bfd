/// What a person signed in to the console may do in their organization (docs/console.md).
/// Stored as its raw value in console sessions and audit entries.
///
/// - `viewer` reads everything of the organization;
/// - `editor` also changes flags, release notes, feature requests and tickets;
/// - `admin` also changes API keys, webhooks and devices (flag, block, clear, revoke).
///
/// An API key of scope `all` acts as `admin`.
public enum OrgRole: UInt8, Sendable, CaseIterable, Comparable {
    case viewer = 1, editor = 2, admin = 3

    public var name: String { String(describing: self) }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    public static func < (a: OrgRole, b: OrgRole) -> Bool { a.rawValue < b.rawValue }
}
