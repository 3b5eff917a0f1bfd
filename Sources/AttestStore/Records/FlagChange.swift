import AttestCore

/// One operator flag change (`attestctl device flag`), kept for good: when, what the flags
/// became, on which key the operator named the device, and why.
///
/// Key in `flag_log`: 16 bytes of SHA-256 over the device's `LineageKey` ‖ at i64 BE ‖ u32 BE
/// sequence within that second, so a lineage's changes read in order with one prefix scan.
/// Layout v1:
/// ```
/// u8 1 | at i64 | previous u8 | flags u8 (bit 0 jailbroken, bit 1 blocked) | keyID bytes
///      | deviceID string | reason string
/// ```
public struct FlagChange: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "flag change"

    public var at: Timestamp
    public var previous: DeviceRecord.OperatorFlags
    public var flags: DeviceRecord.OperatorFlags
    public var keyID: [UInt8]
    public var deviceID: String
    public var reason: String

    public init(at: Timestamp, previous: DeviceRecord.OperatorFlags, flags: DeviceRecord.OperatorFlags, keyID: [UInt8],
                deviceID: String, reason: String) {
        self.at = at
        self.previous = previous
        self.flags = flags
        self.keyID = keyID
        self.deviceID = deviceID
        self.reason = reason
    }

    public func encode(into w: inout BinaryWriter) {
        w.i64(at.seconds)
        w.u8(previous.rawValue)
        w.u8(flags.rawValue)
        w.data(keyID)
        w.string(deviceID)
        w.string(reason)
    }

    public init(from r: inout BinaryReader) throws {
        at = Timestamp(seconds: try r.i64())
        previous = DeviceRecord.OperatorFlags(rawValue: try r.u8())
        flags = DeviceRecord.OperatorFlags(rawValue: try r.u8())
        keyID = try r.data()
        deviceID = try r.string()
        reason = try r.string()
    }
}

extension DeviceRecord.OperatorFlags {
    /// `jailbroken`, `blocked`, both comma-separated, or `none`.
    public var names: String {
        var out = [String]()
        if contains(.jailbreak) { out.append("jailbroken") }
        if contains(.blocked) { out.append("blocked") }
        return out.isEmpty ? "none" : out.joined(separator: ",")
    }
}
