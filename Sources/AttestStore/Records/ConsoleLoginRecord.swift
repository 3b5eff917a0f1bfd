import AttestCore

/// A one-time console sign-in link (`attestctl console login`), not yet used. The link's token
/// is shown once; only its SHA-256 is the key. Using the link deletes the record (in the same
/// transaction that creates the session), so a link works once.
///
/// Key in `console_logins`: SHA-256 of the token (32). Layout v1:
/// ```
/// u8 1 | org string | role u8 (OrgRole) | name string (who it is for) | createdAt i64 | expiresAt i64
/// ```
public struct ConsoleLoginRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "console login"

    public var org: String
    public var role: OrgRole
    public var name: String
    public var createdAt: Timestamp
    public var expiresAt: Timestamp

    public init(org: String, role: OrgRole, name: String, createdAt: Timestamp, expiresAt: Timestamp) {
        self.org = org
        self.role = role
        self.name = name
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(org)
        w.u8(role.rawValue)
        w.string(name)
        w.i64(createdAt.seconds)
        w.i64(expiresAt.seconds)
    }

    public init(from r: inout BinaryReader) throws {
        org = try r.string()
        let raw = try r.u8()
        guard let known = OrgRole(rawValue: raw) else { throw StoreError(.corrupt, "console login role \(raw)") }
        role = known
        name = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        expiresAt = Timestamp(seconds: try r.i64())
    }
}
