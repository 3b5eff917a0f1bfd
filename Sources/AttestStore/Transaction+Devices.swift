/// Devices, their receipts and the deviceId index (lineages, flags: `Transaction+Lineage`).
///
/// ```
/// devices      keyID (32 bytes)      → DeviceRecord
/// device_ids   deviceID (UTF-8)      → keyID
/// receipts     keyID                 → ReceiptRecord (Apple's CMS, verified fields, redemption)
/// ```
extension Transaction {
    public func device(keyID: [UInt8]) throws -> DeviceRecord? {
        guard let bytes = try get(.devices, keyID) else { return nil }
        var record = try DeviceRecord(encoded: bytes)
        record.keyID = keyID
        return record
    }

    /// Prefetches (`prefetch`) the device of `keyID` and what storing it reads (the deviceId
    /// index entry of `deviceID`).
    public func prefetchDevice(keyID: [UInt8], deviceID: String) {
        prefetch(.devices, keyID)
        prefetch(.deviceIDs, Array(deviceID.utf8))
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
        // The index changes only when a key is first stored under its device id. Rewriting an
        // equal entry on every refresh still copied its whole B-tree path in LMDB (a few
        // pages per commit, one more per tree level as the store grows).
        let id = Array(device.deviceID.utf8)
        if try get(.deviceIDs, id) != device.keyID {
            try put(.deviceIDs, id, device.keyID)
        }
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
}
