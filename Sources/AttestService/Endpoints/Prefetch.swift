import AttestCore
import AttestStore

/// The reads a final write will make, named before it starts (`Transaction.prefetch`): on
/// PostgreSQL they go out together with its first statement, one round trip instead of one
/// each (a worker serves one request at a time, so with the database on another host each
/// round trip is time it waits). LMDB ignores them. Only hints: a read that is not foreseen
/// goes out on its own, and what a read returns is the same either way. (On LMDB nothing is
/// worked out: the usage identity alone is a SHA-256.)
enum Prefetch {
    /// Refresh: the device and its deviceId entry, its monthly-active entry, its lineage and
    /// its subject. `device` is the copy the admission read; if the write finds it changed,
    /// whatever it reads differently simply goes out on its own. (A device's first request of
    /// a day adds to a day count without reading it; the month's totals are read only by its
    /// first request of a month: not prefetched.)
    static func deviceWrite(_ device: DeviceRecord, org: String, now: Timestamp, in txn: Transaction) {
        guard txn.prefetches else { return }
        txn.prefetchDevice(keyID: device.keyID, deviceID: device.deviceID)
        txn.prefetchCountedDevice(org: org, month: now.monthKey, identity: UsageIdentity.device(device).bytes)
        txn.prefetchLineage(.of(device))
        if !device.subjectID.isEmpty { txn.prefetchSubject(org: org, subjectID: device.subjectID) }
    }

    /// Validate: the key (absent unless replayed) and its deviceId entry, the monthly-active
    /// entry of `identity` and the month's totals (a new device reads both), the lineage and
    /// its app versions.
    static func enrollment(keyID: [UInt8], deviceID: String, fingerprint: String, identity: UsageIdentity,
                           app: AppContext, now: Timestamp, in txn: Transaction) {
        guard txn.prefetches else { return }
        txn.prefetchDevice(keyID: keyID, deviceID: deviceID)
        txn.prefetchCountedDevice(org: app.org.name, month: now.monthKey, identity: identity.bytes)
        txn.prefetchUsageMonth(org: app.org.name, month: now.monthKey)
        let lineage = LineageKey.of(keyID: keyID, appID: app.app.appID, fingerprint: fingerprint)
        txn.prefetchLineage(lineage)
        txn.prefetchDeviceVersions(lineage: lineage)
    }

    /// Heartbeat: its three reads depend on each other (the deviceId's key, that key's device,
    /// the device's monthly entry), so nothing can be named before the first answer; but a
    /// device sends a heartbeat every 120 s, and its key and monthly identity change only when
    /// it attests again. So the keys its last heartbeat in this worker read are prefetched
    /// (`HeartbeatHints`): one round trip for the three reads instead of three. A stale hint
    /// costs one unused read; the reads' answers are the store's either way.
    static func heartbeat(deviceID: String, org: String, now: Timestamp, in txn: Transaction, _ caches: WorkerCaches) {
        guard txn.prefetches, let (keyID, identity) = caches.heartbeatHints.hint(for: deviceID) else { return }
        txn.prefetchDevice(keyID: keyID, deviceID: deviceID)
        txn.prefetchCountedDevice(org: org, month: now.monthKey, identity: identity)
    }

    /// Keeps `device`'s key and monthly identity for its next heartbeat (`heartbeat`).
    static func rememberHeartbeat(_ device: DeviceRecord, identity: UsageIdentity, in txn: Transaction,
                                  _ caches: WorkerCaches) {
        guard txn.prefetches else { return }
        caches.heartbeatHints.remember(deviceID: device.deviceID, keyID: device.keyID, identity: identity.bytes)
    }
}
