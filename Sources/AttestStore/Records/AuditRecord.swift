import AttestCore

/// One entry of an organization's audit log: who changed what, when, through what.
///
/// Key in `audit_log`: `org ‖ 0x00 ‖ at i64 BE ‖ sequence u64 BE` (the sequence: the writer's
/// wall clock in nanoseconds, which orders entries of one second; ties of two hosts differ by
/// it too). Layout v1:
/// ```
/// u8 1 | at i64 | actor u8 (1 cli, 2 API key, 3 console session) | actorID string
///      | actorName string | role u8 (OrgRole; 0 for the CLI) | action string | target string
///      | detail string
/// ```
/// `actorID` is the API key's id, the session's id in hex, or the CLI's user; `actorName` the
/// key's or session's name. Every text is stored as `AuditText.clean` leaves it (one line, no
/// control characters): what a caller wrote cannot forge rows in `attestctl audit` or the page.
/// `action` is `<family>.<verb>` (`flag.set`, `device.block`, …).
public struct AuditRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "audit entry"
    /// Longest detail kept (bytes, cut at a character boundary).
    public static let detailLimit = 1_000

    public enum Actor: UInt8, Sendable, CaseIterable {
        case cli = 1, apiKey = 2, session = 3
        public var name: String {
            switch self {
            case .cli: return "cli"
            case .apiKey: return "api_key"
            case .session: return "session"
            }
        }
    }

    /// The key's sequence part; set when read, chosen by `Transaction.appendAudit`.
    public var sequence: UInt64 = 0
    public var at: Timestamp
    public var actor: Actor
    public var actorID: String
    public var actorName: String
    public var role: OrgRole?
    public var action: String
    public var target: String
    public var detail: String

    public init(at: Timestamp, actor: Actor, actorID: String, actorName: String, role: OrgRole?, action: String,
                target: String, detail: String) {
        self.at = at
        self.actor = actor
        self.actorID = AuditText.clean(actorID)
        self.actorName = AuditText.clean(actorName)
        self.role = role
        self.action = AuditText.clean(action)
        self.target = AuditText.clean(target)
        let detail = AuditText.clean(detail)
        self.detail = detail.utf8.count <= Self.detailLimit ? detail : Self.cut(detail, Self.detailLimit)
    }

    static func cut(_ s: String, _ limit: Int) -> String {
        var out = ""
        var used = 0
        for c in s {
            let n = c.utf8.count
            if used + n > limit - 3 { break }
            out.append(c)
            used += n
        }
        return out + "…"
    }

    public func encode(into w: inout BinaryWriter) {
        w.i64(at.seconds)
        w.u8(actor.rawValue)
        w.string(actorID)
        w.string(actorName)
        w.u8(role?.rawValue ?? 0)
        w.string(action)
        w.string(target)
        w.string(detail)
    }

    public init(from r: inout BinaryReader) throws {
        at = Timestamp(seconds: try r.i64())
        let rawActor = try r.u8()
        guard let known = Actor(rawValue: rawActor) else { throw StoreError(.corrupt, "audit actor \(rawActor)") }
        actor = known
        actorID = try r.string()
        actorName = try r.string()
        let rawRole = try r.u8()
        role = rawRole == 0 ? nil : OrgRole(rawValue: rawRole)
        guard rawRole == 0 || role != nil else { throw StoreError(.corrupt, "audit role \(rawRole)") }
        action = try r.string()
        target = try r.string()
        detail = try r.string()
    }
}
