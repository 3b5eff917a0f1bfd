import AttestCore
import AttestStore

/// `GET /api/v1/org/devices?q=`: the caller organization's devices that `q` names, at most
/// `limit`, without reading every device of the store.
///
/// Devices are stored by keyId (`devices`) with an index by deviceId (`device_ids`); lineages
/// by app and fingerprint (`fingerprints`), subject links by organization and subject
/// (`subject_devices`). So `q` is looked up, never searched for:
/// - exactly, as a keyId (base64 or base64url), a deviceId, a subject id of the organization and
///   a fingerprint of each of its apps (one read each: the fingerprint's keys, the subject's keys);
/// - as a prefix of at least `prefixMinimum` characters, a range of `devices` (the keyId's
///   leading whole bytes) and of `device_ids`, each stopping after `scanBudget` entries.
/// Without `q`, the organization's devices in keyId order: one walk of `devices` from the start,
/// stopping at `limit` found or `scanBudget` entries read (`truncated` says the budget ended it).
/// Every candidate is kept only when its app is one of the organization's (and `app_id`'s).
struct OrgDeviceSearch {
    static let prefixMinimum = 4
    static let scanBudget = 20_000

    let apps: Set<String>
    let limit: Int
    private(set) var found: [DeviceRecord] = []
    private(set) var truncated = false
    private var seen = Set<[UInt8]>()

    let budget: Int

    init(apps: Set<String>, limit: Int, budget: Int = Self.scanBudget) {
        self.apps = apps
        self.limit = limit
        self.budget = budget
    }

    var full: Bool { found.count >= limit }

    private mutating func keep(_ device: DeviceRecord?) {
        guard let device, !full, apps.contains(device.appID), seen.insert(device.keyID).inserted else { return }
        found.append(device)
    }

    mutating func run(_ q: String?, org: String, in txn: Transaction) throws {
        guard let q else {
            var read = 0
            try txn.scan(.devices) { key, value in
                read += 1
                var d = try DeviceRecord(encoded: value)
                d.keyID = key
                keep(d)
                if read >= budget && !full { truncated = true }
                return !full && read < budget
            }
            return
        }
        if let bytes = Base64.decode(q), bytes.count == 32 { keep(try txn.device(keyID: bytes)) }
        keep(try txn.device(deviceID: q))
        for keyID in try txn.subjectDevices(org: org, subjectID: q) { keep(try txn.device(keyID: keyID)) }
        for app in apps.sorted() {
            guard let lineage = try txn.lineage(.fingerprint(q, appID: app)) else { continue }
            for a in lineage.history.reversed() { keep(try txn.device(keyID: a.keyID)) }
        }
        guard q.count >= Self.prefixMinimum else { return }
        let url = String(q.compactMap { c -> Character? in c == "+" ? "-" : c == "/" ? "_" : c == "=" ? nil : c })
        let whole = url.prefix(url.count / 4 * 4)
        if let start = Base64.decode(String(whole)), !start.isEmpty {
            try prefixScan(.devices, Array(start), in: txn) { key, value in
                guard OrgDeviceWire.keyID(key).hasPrefix(url) else { return nil }
                var d = try DeviceRecord(encoded: value)
                d.keyID = key
                return d
            }
        }
        try prefixScan(.deviceIDs, Array(q.utf8), in: txn) { _, keyID in try txn.device(keyID: keyID) }
    }

    /// Entries of `db` whose key starts with `prefix`, each made a device (or skipped: nil).
    private mutating func prefixScan(_ db: Database, _ prefix: [UInt8], in txn: Transaction,
                                     _ make: ([UInt8], [UInt8]) throws -> DeviceRecord?) throws {
        var read = 0
        try txn.scan(db, from: prefix) { key, value in
            guard key.starts(with: prefix) else { return false }
            read += 1
            keep(try make(key, value))
            if read >= budget && !full { truncated = true }
            return !full && read < budget
        }
    }
}
