import AttestStore

/// Who made a change, as the audit log records it: an API key (its id and name), a console
/// session (its id in hex, the name the sign-in link was made for, its role) or attestctl (the
/// Unix user who ran it). `retainDays` is `console.auditRetentionDays`: entries older than
/// that are dropped as new ones are written.
public struct AuditActor: Sendable, Hashable {
    public let kind: AuditRecord.Actor
    public let id: String
    public let name: String
    public let role: OrgRole?
    public let retainDays: Int

    public init(kind: AuditRecord.Actor, id: String, name: String, role: OrgRole?, retainDays: Int) {
        self.kind = kind
        self.id = id
        self.name = name
        self.role = role
        self.retainDays = retainDays
    }
}
