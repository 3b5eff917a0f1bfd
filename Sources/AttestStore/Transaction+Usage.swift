import AttestCore

/// Monthly-active-device accounting: per-month totals and the devices counted in a month.
///
/// ```
/// usage_months   org ‖ 0x00 ‖ "YYYY-MM"                        → UsageMonthRecord
/// usage_devices  month u32 BE (YYYY·100+MM) ‖ org ‖ 0x00 ‖ identity (16 bytes)
///                                                               → u8 1 ‖ kind u8 (0 device, 1 api_key) ‖ days u32 (bit d-1: active on day d)
/// ```
/// `usage_devices` starts with the month, so the entries of past months (only needed to
/// deduplicate within their month) are swept from the front a few at a time.
extension Transaction {
    /// A counted identity: what kind of device it is and the days of the month it was active.
    public struct CountedDevice: Sendable, Hashable {
        public var apiKey: Bool
        public var days: UInt32
        public init(apiKey: Bool, days: UInt32) {
            self.apiKey = apiKey
            self.days = days
        }
    }

    static func monthNumber(_ month: String) -> UInt32 {
        // "YYYY-MM" → YYYY·100 + MM; callers pass Timestamp.monthKey.
        let parts = month.split(separator: "-")
        guard parts.count == 2, let y = UInt32(parts[0]), let m = UInt32(parts[1]) else { return 0 }
        return y * 100 + m
    }

    static func usageMonthKey(org: String, month: String) -> [UInt8] { Array(org.utf8) + [0] + Array(month.utf8) }

    /// The 4-byte big-endian month number every `usage_devices` key of `month` starts with.
    static func usageDevicePrefix(month: String) -> [UInt8] {
        let n = monthNumber(month)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    }

    static func usageDeviceKey(org: String, month: String, identity: [UInt8]) -> [UInt8] {
        usageDevicePrefix(month: month) + Array(org.utf8) + [0] + identity
    }

    public func usageMonth(org: String, month: String) throws -> UsageMonthRecord? {
        try get(.usageMonths, Self.usageMonthKey(org: org, month: month)).map { try UsageMonthRecord(encoded: $0) }
    }

    public func prefetchUsageMonth(org: String, month: String) { prefetch(.usageMonths, Self.usageMonthKey(org: org, month: month)) }

    public func put(_ record: UsageMonthRecord, org: String, month: String) throws {
        try put(.usageMonths, Self.usageMonthKey(org: org, month: month), record.encoded())
    }

    /// The months with figures for `org`, oldest first.
    public func usageMonths(org: String) throws -> [String] {
        let prefix = Array(org.utf8) + [0]
        var months = [String]()
        try scan(.usageMonths, from: prefix) { key, _ in
            guard key.starts(with: prefix) else { return false }
            months.append(String(decoding: key.dropFirst(prefix.count), as: UTF8.self))
            return true
        }
        return months
    }

    public func countedDevice(org: String, month: String, identity: [UInt8]) throws -> CountedDevice? {
        guard let bytes = try get(.usageDevices, Self.usageDeviceKey(org: org, month: month, identity: identity)) else { return nil }
        guard bytes.count == 6, bytes[0] == 1 else { throw StoreError(.corrupt, "usage device record of \(bytes.count) bytes") }
        return CountedDevice(apiKey: bytes[1] == 1, days: bytes[2...].reduce(0) { $0 << 8 | UInt32($1) })
    }

    public func prefetchCountedDevice(org: String, month: String, identity: [UInt8]) {
        prefetch(.usageDevices, Self.usageDeviceKey(org: org, month: month, identity: identity))
    }

    public func putCountedDevice(_ device: CountedDevice, org: String, month: String, identity: [UInt8]) throws {
        let d = device.days
        try put(.usageDevices, Self.usageDeviceKey(org: org, month: month, identity: identity),
                [1, device.apiKey ? 1 : 0, UInt8(d >> 24), UInt8(d >> 16 & 0xFF), UInt8(d >> 8 & 0xFF), UInt8(d & 0xFF)])
    }

    /// Deletes up to `limit` counted-device entries of months before `month`: the keys below
    /// the month's 4-byte prefix. (A scan from the first key would also read, and on
    /// PostgreSQL lock against writers, the current month's first entries.) Tells nothing
    /// back, so on PostgreSQL it goes out with the next statement.
    public func sweepCountedDevices(before month: String, limit: Int) throws {
        try sweepBelow(.usageDevices, Self.usageDevicePrefix(month: month), limit: limit)
    }
}
