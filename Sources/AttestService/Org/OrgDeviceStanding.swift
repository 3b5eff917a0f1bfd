import AttestCore
import AttestStore

/// Whether refresh (and validate, for a new key of the same device) would refuse a device
/// now, and why, in one sentence a person can act on: the stored reasons `RefreshEndpoint.precheck`
/// and the blocked lineage check use, in the same order (revoked, invalidated, blocked, the
/// app's environment policy), plus a disabled app (`AppLookup`: 403 app_not_registered).
/// What depends on the request itself (a forged or replayed assertion, the month's device
/// limit) cannot be told from the record and is not said.
struct OrgDeviceStanding {
    let refused: Bool
    let why: String

    /// `revocation`: who revoked the key, when and why, when known (keys revoked before
    /// `revocations` was kept have none).
    init(device d: DeviceRecord, app: AppRecord, lineage: LineageRecord, changes: [FlagChange],
         revocation: RevocationRecord? = nil, now: Timestamp) {
        let flags = lineage.flags.union(d.operatorFlags)
        if !app.enabled {
            (refused, why) = (true, "The app \(app.appID) is disabled: every validate and refresh for it answers "
                              + "403 app_not_registered.")
            return
        }
        switch d.status {
        case .revoked:
            let by = revocation.map { r in
                " (\(r.by) on \(r.at.iso8601)" + (r.reason.isEmpty ? "" : ": \"\(r.reason)\"") + ")"
            } ?? ""
            (refused, why) = (true, "This key was revoked by an operator\(by): refresh answers 403 forbidden. "
                              + "The app must attest a new key"
                              + (flags.contains(.blocked) ? ", which this device's block refuses too." : "."))
            return
        case .invalidated:
            let recent = lineage.failures(.failed, now: now)
            (refused, why) = (true, "This key was invalidated after an assertion signed by it was refused (a "
                              + "replayed counter, or the key presented for another app); \(d.failedAssertions) "
                              + "failed assertion(s) on this key, \(recent) on this device in the last 24 hours. "
                              + "Refresh answers 409 reattest_required and the SDK attests a new key.")
            return
        case .active:
            break
        }
        if flags.contains(.blocked) {
            let block = changes.last { $0.flags.contains(.blocked) && !$0.previous.contains(.blocked) }
            let said = block.map { " on \($0.at.iso8601)" + ($0.reason.isEmpty ? "" : ": \"\($0.reason)\"") } ?? ""
            (refused, why) = (true, "This device was blocked by an operator\(said). Refresh answers 403 "
                              + "forbidden and validate isValid false, for every key of its fingerprint.")
            return
        }
        if !app.policy.allows(d.environment) {
            (refused, why) = (true, "The app's environment policy is \(app.policy.rawValue) and this is a "
                              + "\(d.environment.rawValue) key: refresh answers 403 forbidden.")
            return
        }
        refused = false
        why = "Refresh would accept this key: active, not blocked, and a \(d.environment.rawValue) key the app's "
            + "policy (\(app.policy.rawValue)) allows"
            + (flags.contains(.jailbreak) ? "; flagged jailbroken, so its tokens carry a risk score of 80 or more."
                                          : ".")
    }
}
