import AttestCore

/// Attestations and refreshes per organization and UTC day (the console's overview).
///
/// ```
/// activity_days  org ‖ 0x00 ‖ "YYYY-MM" ‖ day u8 (1…31) ‖ kind u8 (1 attestation, 2 refresh)
///                ‖ shard u8 (< Transaction.spreadWays)            → u32 BE: how many this shard counted
/// ```
/// Counted in the write transaction of the attestation or refresh it counts (a refused or
/// rolled-back one is not counted). Sharded like `usage_days`: every refresh of an
/// organization adds to one of 16 keys, so concurrent PostgreSQL writers rarely meet on one
/// row. Kept without expiry: 31 × 2 × 16 keys of 4 bytes at most per organization and month.
extension Transaction {
    public enum Activity: UInt8, Sendable, CaseIterable { case attestation = 1, refresh = 2 }

    /// Adds one `kind` to `org`'s count for `at`'s UTC day.
    public func countActivity(_ kind: Activity, org: String, at: Timestamp) throws {
        let civil = at.civil
        try addOne(.activityDays, Self.usageMonthKey(org: org, month: at.monthKey)
                   + [UInt8(civil.day), kind.rawValue, spread])
    }

    /// `org`'s counts per day of `month` (index 0: day 1), shards added up; as long as the last
    /// day with any.
    public func activityDays(org: String, month: String) throws -> [(attestations: UInt32, refreshes: UInt32)] {
        let prefix = Self.usageMonthKey(org: org, month: month)
        var days = [(attestations: UInt32, refreshes: UInt32)]()
        try scan(.activityDays, from: prefix) { key, value in
            guard key.count == prefix.count + 3, key.starts(with: prefix) else { return false }
            guard value.count == 4, let n = BigEndian.uint32(value) else {
                throw StoreError(.corrupt, "an activity count of \(value.count) bytes")
            }
            let day = Int(key[prefix.count]), kind = key[prefix.count + 1]
            guard (1...31).contains(day), let known = Activity(rawValue: kind) else {
                throw StoreError(.corrupt, "an activity key for day \(day), kind \(kind)")
            }
            while days.count < day { days.append((0, 0)) }
            switch known {
            case .attestation: days[day - 1].attestations &+= n
            case .refresh: days[day - 1].refreshes &+= n
            }
            return true
        }
        return days
    }
}
