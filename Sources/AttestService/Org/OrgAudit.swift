import AttestCore
import AttestStore

/// The organization audit log: every change made through the org API (the console included)
/// or attestctl is recorded in the same transaction as the change (docs/console.md, "Audit").
/// `action` is `<family>.<verb>` (`flag.set`, `device.block`, `apikey.create`, …), `target`
/// what it changed (a flag key, a device's key id, …), `detail` a short human text (the reason
/// given, the new value).
public enum OrgAudit {
    /// Records one change by `caller` in `txn` (the change's own write transaction).
    public static func record(_ caller: OrgCaller, action: String, target: String, detail: String = "",
                              at now: Timestamp, in txn: Transaction) throws {
        // Filled in by the audit store (#43): until then nothing is kept.
        _ = (caller, action, target, detail, now, txn)
    }
}
