import AttestCore
import AttestStore

/// One organization's usage for one month: what `GET /api/v1/org/usage` answers and
/// `attestctl usage` prints. Read from the month's totals record and its day counts
/// (`Transaction.usageMonthReport`: at most 31 × 16 small entries, whatever the number of devices).
///
/// ```
/// {"month": "2026-12", "activeDevices", "apiKeyDevices", "limit" (0 = unlimited),
///  "graceStartedAt": date | null, "graceEndsAt": date | null, "onboardingPaused": bool,
///  "apps": [{"appId", "activeDevices"}],
///  "daily": [{"date": "2026-12-01", "newDevices", "activeDevices", "attestations", "refreshes"}, …]}
///            day 1 up to today (the whole month when past)
/// ```
/// `attestations` and `refreshes` are the day's successful ones (`Transaction.activityDays`;
/// 0 for days before they were counted).
/// ```
/// ```
/// `onboardingPaused`: the organization is at its limit and the grace has ended, so new
/// devices are refused (402) until the month ends or the limit is raised.
public struct UsageReport: Sendable {
    public let org: OrgRecord
    public let month: String
    public let totals: UsageMonthRecord
    public let now: Timestamp
    /// Attestations and refreshes per day (index 0: day 1).
    public let activity: [(attestations: UInt32, refreshes: UInt32)]

    public init(org: OrgRecord, month: String, totals: UsageMonthRecord?, now: Timestamp,
                activity: [(attestations: UInt32, refreshes: UInt32)] = []) {
        self.activity = activity
        self.org = org
        self.month = month
        self.totals = totals ?? UsageMonthRecord()
        self.now = now
    }

    /// `YYYY-MM` with a real month, or `nil`.
    public static func parseMonth(_ text: String) -> String? {
        let u = Array(text.utf8)
        guard u.count == 7, u[4] == UInt8(ascii: "-"),
              u.enumerated().allSatisfy({ $0.offset == 4 || (0x30...0x39).contains($0.element) }),
              let m = Int(text.suffix(2)), (1...12).contains(m) else { return nil }
        return text
    }

    public var graceEndsAt: Timestamp? { totals.graceStartedAt.map { $0 + Int64(org.graceDays) * 86_400 } }

    public var onboardingPaused: Bool {
        guard org.madLimit > 0, totals.activeDevices >= org.madLimit, let end = graceEndsAt else { return false }
        return now >= end
    }

    /// Each day of the month up to today (all of a past month), zeros included.
    public var daily: [(date: String, day: UsageMonthRecord.Day)] {
        let parts = month.split(separator: "-")
        let year = Int(parts[0])!, m = Int(parts[1])!
        let length = Timestamp.daysInMonth(year: year, month: m)
        let last = now.monthKey == month ? now.civil.day : (now.monthKey < month ? 0 : length)
        return (0..<last).map { i in
            (month + "-" + (i < 9 ? "0" : "") + String(i + 1), i < totals.days.count ? totals.days[i] : .init())
        }
    }

    public var json: JSONValue {
        .object([
            ("month", .string(month)), ("activeDevices", .int(Int64(totals.activeDevices))),
            ("apiKeyDevices", .int(Int64(totals.apiKeyDevices))), ("limit", .int(Int64(org.madLimit))),
            ("graceStartedAt", totals.graceStartedAt.map { .string($0.iso8601) } ?? .null),
            ("graceEndsAt", graceEndsAt.map { .string($0.iso8601) } ?? .null),
            ("onboardingPaused", .bool(onboardingPaused)),
            ("apps", .array(totals.apps.map {
                .object([("appId", .string($0.appID)), ("activeDevices", .int(Int64($0.activeDevices)))])
            })),
            ("daily", .array(daily.enumerated().map { i, d in
                let a = i < activity.count ? activity[i] : (0, 0)
                return .object([("date", .string(d.date)), ("newDevices", .int(Int64(d.day.newDevices))),
                                ("activeDevices", .int(Int64(d.day.activeDevices))),
                                ("attestations", .int(Int64(a.0))), ("refreshes", .int(Int64(a.1)))])
            })),
        ])
    }
}
