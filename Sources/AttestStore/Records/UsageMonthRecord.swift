import AttestCore

/// One organization's monthly-active-device figures for one UTC calendar month: what is
/// billed, what the usage report shows, and the grace state. Read in O(1) whatever the
/// number of devices. A day's `activeDevices` here counts the day's new devices and, in stores
/// written before `usage_days`, returning ones; returning devices now go to `usage_days`
/// (`Transaction.countReturningDevice`), and reports add them (`usageMonthReport`).
///
/// Key in `usage_months`: org name (UTF-8) ‖ 0x00 ‖ month `YYYY-MM`. Layout v1:
/// ```
/// u8 1 | activeDevices u32 (billable) | apiKeyDevices u32 | graceStartedAt i64 (0 = none)
///      | events u8 (bit 0 usage.limit_reached queued, bit 1 usage.grace_ended queued)
///      | days u8 (n ≤ 31) | n × (newDevices u32, activeDevices u32), day 1 first
///      | apps u16 (n) | n × (appID string, activeDevices u32)
/// ```
public struct UsageMonthRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "usage month"

    public struct Day: Sendable, Hashable {
        public var newDevices: UInt32 = 0
        public var activeDevices: UInt32 = 0
        public init(newDevices: UInt32 = 0, activeDevices: UInt32 = 0) {
            self.newDevices = newDevices
            self.activeDevices = activeDevices
        }
    }

    /// Billable devices counted this month (App Attest devices).
    public var activeDevices: UInt32 = 0
    /// Devices seen through an organization API key (simulator and CI builds): not billed.
    public var apiKeyDevices: UInt32 = 0
    public var graceStartedAt: Timestamp?
    public var limitReachedQueued = false
    public var graceEndedQueued = false
    /// Index 0 is day 1 of the month; grows as days pass.
    public var days: [Day] = []
    /// Billable devices per App ID, in first-seen order.
    public var apps: [(appID: String, activeDevices: UInt32)] = []

    public init() {}

    public static func == (a: UsageMonthRecord, b: UsageMonthRecord) -> Bool {
        a.activeDevices == b.activeDevices && a.apiKeyDevices == b.apiKeyDevices && a.graceStartedAt == b.graceStartedAt
            && a.limitReachedQueued == b.limitReachedQueued && a.graceEndedQueued == b.graceEndedQueued
            && a.days == b.days
            && a.apps.map(\.appID) == b.apps.map(\.appID) && a.apps.map(\.activeDevices) == b.apps.map(\.activeDevices)
    }

    public func hash(into h: inout Hasher) { h.combine(activeDevices); h.combine(apiKeyDevices); h.combine(days) }

    /// Adds one to the day's figures (`day` is 1-based), growing the list as needed.
    public mutating func note(day: Int, new: Bool, active: Bool) {
        if new { grow(to: day); days[day - 1].newDevices &+= 1 }
        if active { addActive(1, day: day) }
    }

    /// Adds `n` to the day's active devices (the report adds `usage_days` so).
    public mutating func addActive(_ n: UInt32, day: Int) {
        grow(to: day)
        days[day - 1].activeDevices &+= n
    }

    private mutating func grow(to day: Int) {
        precondition((1...31).contains(day))
        while days.count < day { days.append(Day()) }
    }

    public mutating func countApp(_ appID: String) {
        if let i = apps.firstIndex(where: { $0.appID == appID }) {
            apps[i].activeDevices &+= 1
        } else {
            apps.append((appID, 1))
        }
    }

    public func encode(into w: inout BinaryWriter) {
        w.u32(activeDevices)
        w.u32(apiKeyDevices)
        w.i64(graceStartedAt?.seconds ?? 0)
        w.u8((limitReachedQueued ? 1 : 0) | (graceEndedQueued ? 2 : 0))
        w.u8(UInt8(days.count))
        for d in days {
            w.u32(d.newDevices)
            w.u32(d.activeDevices)
        }
        w.u16(UInt16(apps.count))
        for a in apps {
            w.string(a.appID)
            w.u32(a.activeDevices)
        }
    }

    public init(from r: inout BinaryReader) throws {
        activeDevices = try r.u32()
        apiKeyDevices = try r.u32()
        let grace = try r.i64()
        graceStartedAt = grace == 0 ? nil : Timestamp(seconds: grace)
        let events = try r.u8()
        limitReachedQueued = events & 1 != 0
        graceEndedQueued = events & 2 != 0
        let dayCount = Int(try r.u8())
        guard dayCount <= 31 else { throw StoreError(.corrupt, "usage month with \(dayCount) days") }
        for _ in 0..<dayCount { days.append(Day(newDevices: try r.u32(), activeDevices: try r.u32())) }
        for _ in 0..<Int(try r.u16()) { apps.append((try r.string(), try r.u32())) }
    }
}
