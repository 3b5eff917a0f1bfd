import AttestCore
import AttestStore

/// The outcome of counting one request's device for the month.
enum MonthlyAdmission: Equatable {
    /// Counted earlier this month: always admitted.
    case alreadyCounted
    /// Newly counted now.
    case admitted
    /// Not counted: the organization is over its limit and its grace has ended.
    case refused(limit: UInt32, current: UInt32)
    /// Not counted: a new API-key device beyond `usage.apiKeyDevicesPerMonth`.
    case apiKeyDevicesCapped(limit: Int)
}

/// Monthly-active-device admission and counting (docs/contract.md §4), run inside the write transaction
/// of the change it accompanies (validate, refresh, heartbeat), so the count, the admission
/// decision and any event commit together: exact under concurrency, nothing lost on a crash.
///
/// - A device already counted this month is admitted and its day marked active.
/// - A new device is counted while the organization is under `madLimit` (0 = unlimited).
/// - The first new device that would exceed it starts the month's grace (`graceDays`, once
///   per month) and queues `usage.limit_reached`; during grace new devices are admitted.
/// - After the grace, new devices are refused (402 `quota_exceeded`); the first refusal
///   queues `usage.grace_ended`.
/// - API-key devices are counted apart (`apiKeyDevices`) and never billed; new ones beyond
///   `usage.apiKeyDevicesPerMonth` are not counted (the heartbeat answers 429), so a leaked
///   key cannot grow the store without bound.
enum MonthlyCounter {
    /// `now`'s day of the month as a bit of `Transaction.CountedDevice.days`.
    static func dayBit(_ now: Timestamp) -> UInt32 { UInt32(1) << UInt32(now.civil.day - 1) }

    /// Whether `identity` is already counted for `now`'s day (`countActive` would change nothing).
    static func isCountedToday(_ identity: UsageIdentity, org: OrgRecord, now: Timestamp,
                               in txn: Transaction) throws -> Bool {
        try txn.countedDevice(org: org.name, month: now.monthKey, identity: identity.bytes)
            .map { $0.days & Self.dayBit(now) != 0 } ?? false
    }

    /// Counts `identity` for `now`'s month in `txn`, admitting or refusing it (see the type).
    static func countActive(_ identity: UsageIdentity, apiKey: Bool = false, appID: String, org: OrgRecord,
                            in txn: Transaction, now: Timestamp, _ ctx: ServiceContext) throws -> MonthlyAdmission {
        let month = now.monthKey
        let day = now.civil.day
        let bit = Self.dayBit(now)
        // The common case (counted, and already active today) reads one small record.
        let counted = try txn.countedDevice(org: org.name, month: month, identity: identity.bytes)
        if let counted, counted.days & bit != 0 { return .alreadyCounted }
        // Entries of the month before stay for the first day of this one: a request that read
        // the clock just before midnight (a worker mid-verification, a held answer, a host
        // whose clock is behind) still counts in that month and must find its device there.
        try sweepCountedDevicesIfDue(before: (now - 86_400).monthKey, in: txn, ctx.caches)
        if var counted {
            // A returning device's first request of the day: its day is counted in a shard of
            // `usage_days`, not in the month's record, which it neither reads nor writes (a
            // fleet's devices all do this just after midnight: see `Transaction+Usage`).
            counted.days |= bit
            try txn.putCountedDevice(counted, org: org.name, month: month, identity: identity.bytes)
            if !counted.apiKey { try txn.countReturningDevice(org: org.name, month: month, day: day) }
            return .alreadyCounted
        }
        var totals = try txn.usageMonth(org: org.name, month: month) ?? UsageMonthRecord()
        if apiKey {
            let cap = ctx.configuration.apiKeyDevicesPerMonth
            if cap > 0 && Int(totals.apiKeyDevices) >= cap { return .apiKeyDevicesCapped(limit: cap) }
            totals.apiKeyDevices &+= 1
        } else {
            if org.madLimit > 0 && totals.activeDevices >= org.madLimit {
                if totals.graceStartedAt == nil {
                    totals.graceStartedAt = now
                    totals.limitReachedQueued = true
                    try ctx.queueEvent("usage.limit_reached", org: org.name, in: txn, now: now, data: [
                        ("organization", .string(org.name)), ("month", .string(month)),
                        ("limit", .int(Int64(org.madLimit))),
                        ("current", .int(Int64(totals.activeDevices))),
                        ("grace_ends_at", .string((now + Int64(org.graceDays) * 86_400).iso8601)),
                    ])
                }
                // Judged from the grace's start at the earliest: a request that read the clock
                // before another one started the grace commits after it (concurrent workers,
                // hosts whose clocks differ), and a grace of 0 days is over for it as well.
                let graceStart = totals.graceStartedAt!
                if max(now, graceStart) >= graceStart + Int64(org.graceDays) * 86_400 {
                    if !totals.graceEndedQueued {
                        totals.graceEndedQueued = true
                        try ctx.queueEvent("usage.grace_ended", org: org.name, in: txn, now: now, data: [
                            ("organization", .string(org.name)), ("month", .string(month)),
                            ("limit", .int(Int64(org.madLimit))),
                            ("current", .int(Int64(totals.activeDevices))),
                        ])
                    }
                    try txn.put(totals, org: org.name, month: month)
                    return .refused(limit: org.madLimit, current: totals.activeDevices)
                }
            }
            totals.activeDevices &+= 1
            totals.note(day: day, new: true, active: true)
            totals.countApp(appID)
        }
        try txn.putCountedDevice(.init(apiKey: apiKey, days: bit), org: org.name, month: month,
                                 identity: identity.bytes)
        try txn.put(totals, org: org.name, month: month)
        return .admitted
    }

    /// Counts `identity` for the month, with a read first (or `countedToday`, read by the
    /// caller): a device already active today needs no write transaction (heartbeat).
    static func markActive(_ identity: UsageIdentity, countedToday: Bool? = nil, apiKey: Bool, appID: String,
                           org: OrgRecord, now: Timestamp, _ ctx: ServiceContext) throws -> MonthlyAdmission {
        let today = try countedToday ?? ctx.store.read { try isCountedToday(identity, org: org, now: now, in: $0) }
        if today { return .alreadyCounted }
        return try ctx.store.write([.durable]) { txn in
            try countActive(identity, apiKey: apiKey, appID: appID, org: org, in: txn, now: now, ctx)
        }
    }

    /// Past months' counted devices are swept by one counting in `RateLimits.sweepInterval` of each
    /// process (its first included), up to `sweepLimit` entries: on average 4 a counting. On
    /// PostgreSQL a sweep costs a planned statement even when nothing is left to delete, and
    /// two sweeps in flight read, and may delete, the same first entries, so one of them loses
    /// a serialization conflict; a fleet's first requests of a day all count at once. With
    /// 4 processes, each with a store of its own on one PostgreSQL server, counting returning
    /// devices at a day start (`nginx/bench/daystart.sh`'s reference layout), sweeping in every
    /// counting gave 6,600–7,400 a second and this 10,000–11,300, in runs minutes apart (not
    /// interleaved); in one organization, rounds interleaved in one run, 4,270–4,520 against
    /// 4,700–7,200.
    static func sweepCountedDevicesIfDue(before month: String, in txn: Transaction, _ caches: WorkerCaches) throws {
        guard RateLimits.sweepDue(&caches.usageCountings) else { return }
        try txn.sweepCountedDevices(before: month, limit: RateLimits.sweepLimit)
    }
}

extension ServiceError {
    /// 402 `quota_exceeded` with `limit`, `current` and `upgradeUrl`; with
    /// `compat.madLimitStatus` = 429, the shape the shipping SDK recognises: status 429 and
    /// `error: "mad_limit_exceeded"` (the message stays in `reason`).
    static func quotaExceeded(limit: UInt32, current: UInt32, org: OrgRecord, compatStatus: Int) -> ServiceError {
        var e = ServiceError(.quotaExceeded,
                             "This organization has reached its monthly active device limit (\(limit)); new devices "
                             + "are refused until next month or an upgrade.",
                             hint: org.upgradeURL.isEmpty ? "Raise the limit with 'attestctl org set --mad-limit N'."
                                                          : "Upgrade at \(org.upgradeURL).",
                             log: "org \(org.name) at \(current)/\(limit), grace over",
                             extra: [("limit", .int(Int64(limit))), ("current", .int(Int64(current))),
                                     ("upgradeUrl", .string(org.upgradeURL))])
        if compatStatus == 429 {
            e.compatStatus = 429
            e.compatErrorMember = "mad_limit_exceeded"
        }
        return e
    }
}
