import AttestCore

/// Monthly-active-device accounting: per-month totals and the devices counted in a month.
///
/// ```
/// usage_months   org ‖ 0x00 ‖ "YYYY-MM"                        → UsageMonthRecord
/// usage_devices  month u32 BE (YYYY·100+MM) ‖ org ‖ 0x00 ‖ identity (16 bytes)
///                                                               → u8 1 ‖ kind u8 (0 device, 1 api_key) ‖
///                                                                 days u32 (bit d-1: active on day d)
/// usage_days     org ‖ 0x00 ‖ "YYYY-MM" ‖ day u8 (1…31) ‖ shard u8 (< Transaction.spreadWays)
///                                                               → u32 BE: billable devices counted earlier in
///                                                                 the month whose first request of that day
///                                                                 this shard counted
/// ```
/// `usage_devices` starts with the month, so the entries of past months (only needed to
/// deduplicate within their month) are swept from the front a few at a time.
///
/// A day's active devices are its new devices (counted in the month's record, which a new
/// device changes anyway: the month's total and its limit) plus the returning devices in
/// `usage_days`. Returning devices are kept out of the month's record because they all arrive
/// at once: a fleet's first requests of a UTC day come within minutes of midnight, and on
/// PostgreSQL every transaction writing the one record conflicts with every other (measured:
/// 4 processes counting returning devices reran 1.2 times per transaction). Each transaction
/// adds to the shard it drew (`Transaction.spread`); the report adds the shards up
/// (`usageMonthReport`).
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

    static func usageDayKey(org: String, month: String, day: Int, shard: UInt8) -> [UInt8] {
        usageMonthKey(org: org, month: month) + [UInt8(day), shard]
    }

    /// Counts one billable device, counted earlier in `month`, as active on `day` (1-based) in
    /// this transaction's shard of the day. Tells nothing back, so on PostgreSQL it goes out
    /// with the next statement.
    public func countReturningDevice(org: String, month: String, day: Int) throws {
        precondition((1...31).contains(day))
        try addOne(.usageDays, Self.usageDayKey(org: org, month: month, day: day, shard: spread))
    }

    /// The returning devices of each day of `month` (index 0: day 1), the shards added up;
    /// as long as the last day with any.
    public func returningDevices(org: String, month: String) throws -> [UInt32] {
        let prefix = Self.usageMonthKey(org: org, month: month)
        var days = [UInt32]()
        try scan(.usageDays, from: prefix) { key, value in
            guard key.count == prefix.count + 2, key.starts(with: prefix) else { return false }
            guard value.count == 4, let n = BigEndian.uint32(value) else {
                throw StoreError(.corrupt, "usage day count of \(value.count) bytes")
            }
            let day = Int(key[prefix.count])
            guard (1...31).contains(day) else { throw StoreError(.corrupt, "usage day count for day \(day)") }
            while days.count < day { days.append(0) }
            days[day - 1] &+= n
            return true
        }
        return days
    }

    /// The month's figures as reports show them: the record, with each day's returning devices
    /// (`usage_days`) added to its active devices. `nil` when the month has neither. Counting
    /// reads `usageMonth`, never this (it would write the sums back).
    public func usageMonthReport(org: String, month: String) throws -> UsageMonthRecord? {
        let returning = try returningDevices(org: org, month: month)
        guard var record = try usageMonth(org: org, month: month)
                ?? (returning.isEmpty ? nil : UsageMonthRecord()) else { return nil }
        for (i, n) in returning.enumerated() where n > 0 { record.addActive(n, day: i + 1) }
        return record
    }

    public func usageMonth(org: String, month: String) throws -> UsageMonthRecord? {
        try get(.usageMonths, Self.usageMonthKey(org: org, month: month)).map { try UsageMonthRecord(encoded: $0) }
    }

    public func prefetchUsageMonth(org: String, month: String) {
        prefetch(.usageMonths, Self.usageMonthKey(org: org, month: month))
    }

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
        guard let bytes = try get(.usageDevices, Self.usageDeviceKey(org: org, month: month, identity: identity)) else {
            return nil
        }
        guard bytes.count == 6, bytes[0] == 1 else {
            throw StoreError(.corrupt, "usage device record of \(bytes.count) bytes")
        }
        return CountedDevice(apiKey: bytes[1] == 1, days: bytes[2...].reduce(0) { $0 << 8 | UInt32($1) })
    }

    public func prefetchCountedDevice(org: String, month: String, identity: [UInt8]) {
        prefetch(.usageDevices, Self.usageDeviceKey(org: org, month: month, identity: identity))
    }

    public func putCountedDevice(_ device: CountedDevice, org: String, month: String, identity: [UInt8]) throws {
        let d = device.days
        try put(.usageDevices, Self.usageDeviceKey(org: org, month: month, identity: identity),
                [1, device.apiKey ? 1 : 0,
                 UInt8(d >> 24), UInt8(d >> 16 & 0xFF), UInt8(d >> 8 & 0xFF), UInt8(d & 0xFF)])
    }

    /// Deletes up to `limit` counted-device entries of months before `month`: the keys below
    /// the month's 4-byte prefix. (A scan from the first key would also read, and on
    /// PostgreSQL lock against writers, the current month's first entries.) Tells nothing
    /// back, so on PostgreSQL it goes out with the next statement.
    public func sweepCountedDevices(before month: String, limit: Int) throws {
        try sweepBelow(.usageDevices, Self.usageDevicePrefix(month: month), limit: limit)
    }
}
