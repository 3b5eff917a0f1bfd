import AttestCore
import AttestService
import AttestStore
import CLISupport

/// An attestctl change as the organization's audit log records it: `action` (`flag.set`,
/// `ticket.reply`, …), the command's first positional (an id) or `--key` as the target, and
/// its other options as the detail, in the change's own transaction.
struct CLIAudit {
    let actor: AuditActor
    let action: String
    let target: String
    let detail: String

    init(actor: AuditActor, action: String, target: String, detail: String) {
        self.actor = actor
        self.action = action
        self.target = target
        self.detail = detail
    }

    init(actor: AuditActor, action: String, args: Arguments) {
        self.actor = actor
        self.action = action
        target = args.positionals.first ?? args.value("key") ?? ""
        detail = ["env", "value", "status", "priority", "into", "body", "version", "title", "percent", "device",
                  "when", "reason"]
            .compactMap { name in args.value(name).map { "\(name) \($0)" } }.joined(separator: ", ")
    }

    /// Records the change in `txn`; nothing when the app has no organization (`org` empty).
    func record(org: String, appID: String, in txn: Transaction) throws {
        guard !org.isEmpty else { return }
        try OrgAudit.record(actor, org: org, action: action, target: target,
                            detail: "app \(appID)" + (detail.isEmpty ? "" : ": " + detail), at: now(), in: txn)
    }

    /// Records a change a command already committed (one made by a shared function with its
    /// own transaction), in a transaction of its own right after.
    static func recordAfter(store: Store, appID: String, actor: AuditActor, action: String, target: String,
                            detail: String) throws {
        try store.write([.durable]) { txn in
            guard let app = try txn.app(id: appID) else { return }
            try OrgAudit.record(actor, org: app.org, action: action, target: target,
                                detail: "app \(appID)" + (detail.isEmpty ? "" : ": " + detail), at: now(), in: txn)
        }
    }

    /// Records an organization-level change a command already committed, in its own transaction.
    static func recordOrg(store: Store, org: String, actor: AuditActor, action: String, target: String,
                          detail: String = "") throws {
        try store.write([.durable]) { txn in
            guard try txn.org(named: org) != nil else { return }
            try OrgAudit.record(actor, org: org, action: action, target: target, detail: detail, at: now(), in: txn)
        }
    }

    /// The organization of the app `appID` (nil when it has none).
    static func org(ofApp appID: String, _ store: Store) throws -> String? {
        try store.read { try $0.app(id: appID)?.org }
    }
}
