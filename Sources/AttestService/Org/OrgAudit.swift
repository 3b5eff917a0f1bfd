import AttestCore
import AttestStore

/// The organization audit log: every change made through the org API (the console included)
/// or attestctl is recorded in the same transaction as the change (docs/console.md, "Audit").
/// `action` is `<family>.<verb>` (`flag.set`, `device.block`, `apikey.create`, …), `target`
/// what it changed (a flag key, a device's key id, …), `detail` a short human text (the reason
/// given, the new value; cut at `AuditRecord.detailLimit` bytes).
public enum OrgAudit {
    /// Records one change by `caller` in `txn` (the change's own write transaction).
    public static func record(_ caller: OrgCaller, action: String, target: String, detail: String = "",
                              at now: Timestamp, in txn: Transaction) throws {
        try record(caller.actor, org: caller.org.name, action: action, target: target, detail: detail, at: now, in: txn)
    }

    /// Records one change by `actor` in `org`'s log.
    public static func record(_ actor: AuditActor, org: String, action: String, target: String, detail: String = "",
                              at now: Timestamp, in txn: Transaction) throws {
        let entry = AuditRecord(at: now, actor: actor.kind, actorID: actor.id, actorName: actor.name, role: actor.role,
                                action: action, target: target, detail: detail)
        try txn.appendAudit(entry, org: org, retainAfter: now - Int64(actor.retainDays) * 86_400,
                            keep: actor.keepEntries)
    }

    /// An entry as the org API and `attestctl audit --json` show it:
    /// `{at, actor: {kind: cli|api_key|session, id, name, role (or null)}, action, target, detail, cursor}`;
    /// `cursor` is what `before=` takes to page on (`<at>.<sequence>`).
    public static func json(_ e: AuditRecord) -> JSONValue {
        .object([("at", .string(e.at.iso8601)),
                 ("actor", .object([("kind", .string(e.actor.name)), ("id", .string(e.actorID)),
                                    ("name", .string(e.actorName)),
                                    ("role", e.role.map { .string($0.name) } ?? .null)])),
                 ("action", .string(e.action)), ("target", .string(e.target)), ("detail", .string(e.detail)),
                 ("cursor", .string("\(e.at.seconds).\(e.sequence)"))])
    }

    /// A `before=` cursor (`<at>.<sequence>`), or nil when malformed.
    public static func cursor(_ text: String) -> (at: Int64, sequence: UInt64)? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let at = Int64(parts[0]), let seq = UInt64(parts[1]) else { return nil }
        return (at, seq)
    }
}
