import AttestConfig
import AttestStore

/// Who made a change, as the audit log records it: an API key (its id and name), a console
/// session (its id in hex, the name the sign-in link was made for, its role) or attestctl (the
/// Unix user who ran it). `retainDays` is `console.auditRetentionDays` and `keepEntries`
/// `console.auditEntriesPerOrganization`: older entries, and the oldest past that many, are
/// dropped as new ones are written.
public struct AuditActor: Sendable, Hashable {
    public let kind: AuditRecord.Actor
    public let id: String
    public let name: String
    public let role: OrgRole?
    public let retainDays: Int
    public let keepEntries: Int

    public init(kind: AuditRecord.Actor, id: String, name: String, role: OrgRole?, retainDays: Int,
                keepEntries: Int = 200_000) {
        self.keepEntries = keepEntries
        self.kind = kind
        self.id = id
        self.name = name
        self.role = role
        self.retainDays = retainDays
    }

    /// Who, in a sentence: "Pat (editor, console session 1a2b3c4d)", "API key aat_AbCdEfGh (ci)",
    /// "attestctl (root)".
    public var describedBy: String {
        switch kind {
        case .cli: return "attestctl (\(id))"
        case .apiKey: return "API key \(id)" + (name.isEmpty ? "" : " (\(name))")
        case .session: return "\(name) (\(role?.name ?? "?"), console session \(id.prefix(8)))"
        }
    }

    /// An actor whose entries keep `configuration`'s bounds.
    public init(kind: AuditRecord.Actor, id: String, name: String, role: OrgRole?, _ configuration: Configuration) {
        self.init(kind: kind, id: id, name: name, role: role, retainDays: configuration.consoleAuditRetentionDays,
                  keepEntries: configuration.consoleAuditEntriesPerOrganization)
    }
}
