import AttestCore
import AttestStore

/// What happens inside the write transaction of every successful validate and refresh,
/// besides the device change itself. This is where monthly-active-device admission and
/// counting (SPEC §4) and webhook events (SPEC §7) join the same transaction, so a count or
/// an event is never lost or doubled by a crash. Those capabilities are separate issues;
/// until they land this records nothing beyond the device's own `lastSeenAt`.
enum Activity {
    case attested(new: Bool)
    case refreshed
}

extension ServiceContext {
    func recordActivity(_ activity: Activity, device: DeviceRecord, app: AppContext, in txn: Transaction, now: Timestamp) throws {}
}
