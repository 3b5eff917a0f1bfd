/// Devices, their receipts, the deviceId index and fingerprint key counts.
///
/// ```
/// devices      keyID (32 bytes)      → DeviceRecord
/// device_ids   deviceID (UTF-8)      → keyID
/// receipts     keyID                 → u8 1 ‖ receipt bytes (Apple's PKCS #7)
/// fingerprints appID ‖ 0x00 ‖ fingerprint (UTF-8) → u8 1 ‖ u32 keys seen ‖ 32-byte latest keyID
/// ```
/// `deviceFingerprint` is client-supplied, so its records are scoped to the app: one tenant's
/// values never touch another's. (Entries written before the scoping, keyed by the bare
/// fingerprint, are never read again.)
extension Transaction {
    public func device(keyID: [UInt8]) throws -> DeviceRecord? {
        guard let bytes = try get(.devices, keyID) else { return nil }
        var record = try DeviceRecord(encoded: bytes)
        record.keyID = keyID
        return record
    }

    /// The device whose deviceId is `deviceID`.
    public func device(deviceID: String) throws -> DeviceRecord? {
        guard let keyID = try get(.deviceIDs, Array(deviceID.utf8)) else { return nil }
        return try device(keyID: keyID)
    }

    /// Stores the device and its deviceId index entry.
    public func put(_ device: DeviceRecord) throws {
        precondition(device.keyID.count == 32, "keyID is 32 bytes")
        try put(.devices, device.keyID, device.encoded())
        try put(.deviceIDs, Array(device.deviceID.utf8), device.keyID)
    }

    /// Devices in keyID order, at most `limit`.
    public func devices(limit: Int = .max) throws -> [DeviceRecord] {
        var found = [DeviceRecord]()
        try scan(.devices) { key, value in
            var record = try DeviceRecord(encoded: value)
            record.keyID = key
            found.append(record)
            return found.count < limit
        }
        return found
    }

    public func receipt(keyID: [UInt8]) throws -> [UInt8]? {
        guard let bytes = try get(.receipts, keyID), let version = bytes.first else { return nil }
        guard version == 1 else { throw StoreError(.unknownVersion, "receipt record version \(version)") }
        return Array(bytes.dropFirst())
    }

    public func putReceipt(_ receipt: [UInt8], keyID: [UInt8]) throws {
        try put(.receipts, keyID, [1] + receipt)
    }

    static func fingerprintKey(_ fingerprint: String, appID: String) -> [UInt8] {
        Array(appID.utf8) + [0] + Array(fingerprint.utf8)
    }

    /// Records that `keyID` was attested with `fingerprint` for `appID`; returns how many
    /// distinct keys the fingerprint has now been seen with in that app (key churn is a risk
    /// signal).
    @discardableResult
    public func noteFingerprint(_ fingerprint: String, appID: String, keyID: [UInt8]) throws -> UInt32 {
        let key = Self.fingerprintKey(fingerprint, appID: appID)
        var count: UInt32 = 0
        if let bytes = try get(.fingerprints, key) {
            var r = try BinaryReader(bytes, record: "fingerprint")
            guard r.version == 1 else { throw StoreError(.unknownVersion, "fingerprint record version \(r.version)") }
            count = try r.u32()
            let latest = try r.data()
            if latest == keyID { return count }
        }
        count += 1
        var w = BinaryWriter(version: 1)
        w.u32(count)
        w.data(keyID)
        try put(.fingerprints, key, w.bytes)
        return count
    }

    /// Distinct keys seen with `fingerprint` in `appID` (0 when never seen).
    public func fingerprintKeyCount(_ fingerprint: String, appID: String) throws -> UInt32 {
        guard let bytes = try get(.fingerprints, Self.fingerprintKey(fingerprint, appID: appID)) else { return 0 }
        var r = try BinaryReader(bytes, record: "fingerprint")
        return try r.u32()
    }
}
