import AttestCore

/// A console session: what a used sign-in link becomes. The browser holds
/// `base64url(id ‖ secret)` in an HttpOnly cookie; the store keeps the secret's SHA-256, the
/// CSRF token the page sends back on every change, and the role and organization.
///
/// Key in `console_sessions`: the id (16 random bytes; shown in hex as the session's name).
/// Layout v1:
/// ```
/// u8 1 | org string | role u8 (OrgRole) | name string | secretHash bytes (32) | csrf bytes (32)
///      | createdAt i64 | expiresAt i64 | endedAt i64 (0 = live)
/// ```
/// An ended or expired session is refused; `console sessions` lists live ones, and ended ones
/// are deleted once expired (`Transaction.sweepConsoleSessions`).
public struct ConsoleSessionRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "console session"

    /// The record's key, not part of the value.
    public var id: [UInt8]
    public var org: String
    public var role: OrgRole
    public var name: String
    public var secretHash: [UInt8]
    public var csrf: [UInt8]
    public var createdAt: Timestamp
    public var expiresAt: Timestamp
    public var endedAt: Timestamp?

    public init(id: [UInt8], org: String, role: OrgRole, name: String, secretHash: [UInt8], csrf: [UInt8],
                createdAt: Timestamp, expiresAt: Timestamp, endedAt: Timestamp? = nil) {
        self.id = id
        self.org = org
        self.role = role
        self.name = name
        self.secretHash = secretHash
        self.csrf = csrf
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
    }

    /// Neither ended nor past its expiry at `now`.
    public func isLive(at now: Timestamp) -> Bool { endedAt == nil && now < expiresAt }

    /// The session's id as shown and as `console logout` takes it (32 hex digits).
    public var idHex: String { Hex.encode(id) }

    public func encode(into w: inout BinaryWriter) {
        w.string(org)
        w.u8(role.rawValue)
        w.string(name)
        w.data(secretHash)
        w.data(csrf)
        w.i64(createdAt.seconds)
        w.i64(expiresAt.seconds)
        w.i64(endedAt?.seconds ?? 0)
    }

    public init(from r: inout BinaryReader) throws {
        id = []
        org = try r.string()
        let raw = try r.u8()
        guard let known = OrgRole(rawValue: raw) else { throw StoreError(.corrupt, "console session role \(raw)") }
        role = known
        name = try r.string()
        secretHash = try r.data()
        csrf = try r.data()
        guard secretHash.count == 32, csrf.count == 32 else {
            throw StoreError(.corrupt, "console session secret hash or csrf of the wrong size")
        }
        createdAt = Timestamp(seconds: try r.i64())
        expiresAt = Timestamp(seconds: try r.i64())
        let ended = try r.i64()
        endedAt = ended == 0 ? nil : Timestamp(seconds: ended)
    }
}
