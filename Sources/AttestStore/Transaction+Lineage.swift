import AttestCore

/// Device lineages (the keys of one fingerprint, operator flags, recent assertion failures)
/// and the operator's flag log.
///
/// ```
/// fingerprints  LineageKey                                   → LineageRecord
/// flag_log      SHA-256(LineageKey)[0..<16] ‖ at i64 ‖ u32   → FlagChange
/// ```
/// `deviceFingerprint` is client-supplied, so lineages are scoped to the app: one tenant's
/// values never touch another's. (Entries written before the scoping, keyed by the bare
/// fingerprint, are never read again.)
extension Transaction {
    public func lineage(_ key: LineageKey) throws -> LineageRecord? {
        try get(.fingerprints, key.bytes).map { try LineageRecord(encoded: $0) }
    }

    public func prefetchLineage(_ key: LineageKey) { prefetch(.fingerprints, key.bytes) }

    public func put(_ lineage: LineageRecord, _ key: LineageKey) throws {
        try put(.fingerprints, key.bytes, lineage.encoded())
    }

    /// The lineage of `device`; for a device whose lineage was never written (no fingerprint,
    /// nothing happened to it), one made of the device alone.
    public func lineage(of device: DeviceRecord) throws -> LineageRecord {
        if let stored = try lineage(.of(device)) { return stored }
        return LineageRecord(keys: 1, flags: device.operatorFlags,
                             history: [.init(keyID: device.keyID, attestedAt: device.lastAttestedAt)])
    }

    /// Records that `keyID` was attested with `fingerprint` for `appID` at `at`; returns the
    /// lineage as it is now (its `keys` is how many distinct keys the fingerprint has been
    /// seen with in that app: key churn is a risk signal).
    @discardableResult
    public func noteFingerprint(_ fingerprint: String, appID: String, keyID: [UInt8],
                                at: Timestamp) throws -> LineageRecord {
        let key = LineageKey.fingerprint(fingerprint, appID: appID)
        var record = try lineage(key) ?? LineageRecord()
        let before = record
        record.noteAttestation(keyID, at: at)
        if record != before { try put(record, key) }
        return record
    }

    /// Distinct keys seen with `fingerprint` in `appID` (0 when never seen).
    public func fingerprintKeyCount(_ fingerprint: String, appID: String) throws -> UInt32 {
        try lineage(.fingerprint(fingerprint, appID: appID))?.keys ?? 0
    }

    /// Appends `change` to the flag log of `key`.
    public func appendFlagChange(_ change: FlagChange, _ key: LineageKey) throws {
        let prefix = key.digest + Self.bigEndian(UInt64(bitPattern: change.at.seconds), 8)
        var sequence: UInt32 = 0
        try scan(.flagLog, from: prefix) { k, _ in
            guard k.starts(with: prefix) else { return false }
            sequence += 1
            return true
        }
        try put(.flagLog, prefix + Self.bigEndian(UInt64(sequence), 4), change.encoded())
    }

    /// Every flag change of `key`, oldest first.
    public func flagChanges(_ key: LineageKey) throws -> [FlagChange] {
        let prefix = key.digest
        var found = [FlagChange]()
        try scan(.flagLog, from: prefix) { k, v in
            guard k.starts(with: prefix) else { return false }
            found.append(try FlagChange(encoded: v))
            return true
        }
        return found
    }

    static func bigEndian(_ v: UInt64, _ width: Int) -> [UInt8] {
        (0..<width).reversed().map { UInt8(truncatingIfNeeded: v >> (UInt64($0) * 8)) }
    }
}
