import AttestCore
@testable import AttestStore
import Foundation
import Testing

/// What every store backend must do, run against each: LMDB always, PostgreSQL when
/// `ATTEST_TEST_POSTGRES_URL` names a server (`nginx/scripts/test.sh` starts one; with
/// `ATTEST_REQUIRE_POSTGRES=1` a missing URL fails instead of skipping).
///
/// The typed operations are written once over `StoreTransaction`, so what differs between
/// backends, and is pinned here, is the contract underneath: byte order of keys, scans,
/// single-insert, sweeps, counters, rollback, and (PostgreSQL) exactness under concurrent
/// writers on separate connections, the way separate hosts write.
@Suite struct StoreConformance {
    enum Kind: String, CustomStringConvertible, CaseIterable {
        case lmdb, postgres
        var description: String { rawValue }
    }

    static var postgresURL: String? {
        ProcessInfo.processInfo.environment["ATTEST_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    static var kinds: [Kind] {
        postgresURL != nil || ProcessInfo.processInfo.environment["ATTEST_REQUIRE_POSTGRES"] == "1"
            ? [.lmdb, .postgres] : [.lmdb]
    }

    /// A fresh, empty store of `kind`: a temporary directory, or a new schema of its own in
    /// the test database (dropped afterwards).
    final class Fixture {
        let kind: Kind
        let dir = TemporaryDirectory()
        private var schema: String?
        /// PostgreSQL: the schema holding this fixture's tables.
        var schemaName: String? { schema }
        var options = StoreOptions(durableMapSizeMiB: 64, ephemeralMapSizeMiB: 16)

        init(_ kind: Kind) throws {
            self.kind = kind
            guard kind == .postgres else { return }
            guard let url = StoreConformance.postgresURL else {
                throw StoreError(.open, "ATTEST_REQUIRE_POSTGRES=1 but ATTEST_TEST_POSTGRES_URL is unset")
            }
            let name = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let admin = PGConnection(url: url)
            try admin.ensure()
            try admin.command("CREATE SCHEMA \(name)")
            schema = name
            options.backend = .postgres(url: url + " options='-c search_path=\(name)'")
        }

        deinit {
            guard let schema, let url = StoreConformance.postgresURL else { return }
            let admin = PGConnection(url: url)
            try? admin.ensure()
            try? admin.command("DROP SCHEMA \(schema) CASCADE")
        }

        func open() throws -> Store { try Store(directory: dir.path + "/store", options: options) }
    }

    struct Boom: Error {}

    @Test(arguments: kinds) func getPutDeleteAndSingleInsert(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let puts = try store.write { txn in
            [try txn.put(.meta, [1], [10]), try txn.put(.meta, [1], [11]),
             try txn.put(.meta, [1], [12], noOverwrite: true),
             try txn.put(.meta, [2], [], noOverwrite: true)]
        }
        #expect(puts == [true, true, false, true],
                "an overwrite succeeds; noOverwrite leaves the value; an empty value is a value")
        let reads = try store.read { txn in
            [try txn.get(.meta, [1]), try txn.get(.meta, [2]), try txn.get(.meta, [3]), try txn.get(.orgs, [1])]
        }
        #expect(reads == [[11], [], nil, nil], "databases are separate")
        let deletes = try store.write { txn in [try txn.delete(.meta, [1]), try txn.delete(.meta, [1])] }
        #expect(deletes == [true, false])
        #expect(try store.read { try $0.get(.meta, [1]) } == nil)
    }

    @Test(arguments: kinds) func keysAreOrderedAsUnsignedBytesAndScansPage(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let keys: [[UInt8]] = [[0x80], [0x01, 0x00], [0xFF], [0x01], [0x7F, 0xFF], [0x00], [0x01, 0x00, 0x00]]
        try store.write { txn in for k in keys { try txn.put(.devices, k, k + [0xAA]) } }
        var seen = [[UInt8]]()
        try store.read { txn in
            try txn.scan(.devices) { k, v in #expect(v == k + [0xAA]); seen.append(k); return true }
        }
        #expect(seen == [[0x00], [0x01], [0x01, 0x00], [0x01, 0x00, 0x00], [0x7F, 0xFF], [0x80], [0xFF]])
        var from = [[UInt8]]()
        try store.read { txn in
            try txn.scan(.devices, from: [0x01, 0x00]) { k, _ in from.append(k); return from.count < 3 }
        }
        #expect(from == [[0x01, 0x00], [0x01, 0x00, 0x00], [0x7F, 0xFF]],
                "from the first key ≥ start, stopping when told")
        #expect(try store.read { try $0.lastKey(.devices) } == [0xFF])
        #expect(try store.read { try $0.lastKey(.orgs) } == nil)

        // More entries than one PostgreSQL page, scanned while the visitor deletes them.
        try store.write { txn in for i in 0..<700 { try txn.put(.receipts, [UInt8(i >> 8), UInt8(i & 0xFF)], [1]) } }
        #expect(try store.read { try $0.count(.receipts) } == 700)
        let visited = try store.write { txn -> Int in
            var n = 0
            try txn.scan(.receipts) { k, _ in n += 1; try txn.delete(.receipts, k); return true }
            return n
        }
        #expect(visited == 700)
        #expect(try store.read { try $0.count(.receipts) } == 0)
    }

    @Test(arguments: kinds) func backwardScansStartBelowTheBoundAndPage(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let keys: [[UInt8]] = [[0x00], [0x01], [0x01, 0x00], [0x7F, 0xFF], [0x80], [0xFF]]
        try store.write { txn in for k in keys { try txn.put(.devices, k, k + [0xAA]) } }
        func backward(_ bound: [UInt8], stopAfter: Int = .max) throws -> [[UInt8]] {
            var seen = [[UInt8]]()
            try store.read { txn in
                try txn.scanBackward(.devices, before: bound) { k, v in
                    #expect(v == k + [0xAA]); seen.append(k); return seen.count < stopAfter
                }
            }
            return seen
        }
        #expect(try backward([0xFF, 0x00]) == keys.reversed(), "a bound past the last key: from the last")
        #expect(try backward([0x80]) == [[0x7F, 0xFF], [0x01, 0x00], [0x01], [0x00]], "the bound itself is excluded")
        #expect(try backward([0x01, 0x00, 0x00], stopAfter: 2) == [[0x01, 0x00], [0x01]], "stops when told")
        #expect(try backward([0x00]).isEmpty, "nothing sorts before the first key")
        // More entries than one PostgreSQL page.
        try store.write { txn in for i in 0..<700 { try txn.put(.receipts, [UInt8(i >> 8), UInt8(i & 0xFF)], [1]) } }
        var order = [Int]()
        try store.read { txn in
            try txn.scanBackward(.receipts, before: [0xFF]) { k, _ in
                order.append(Int(k[0]) << 8 | Int(k[1])); return true
            }
        }
        #expect(order == Array((0..<700).reversed()))
    }

    @Test(arguments: kinds) func anEndpointsLogReadsNewestFirstAndIsRemovedInBatches(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let now = Timestamp(seconds: 1_780_000_000)
        // Two endpoints whose ids share a prefix; 300 deliveries to one (more than a page), 3 to the other.
        try store.write { txn in
            for id in ["wh_a", "wh_ab"] {
                try txn.put(WebhookEndpointRecord(id: id, org: "acme", url: "https://example.com/", events: [],
                                                  description: "", secret: "whsec_x", createdAt: now))
            }
            for i in 0..<303 {
                let event = OutboxEvent(id: "evt_\(i)", event: "device.new", org: "acme", createdAt: now,
                                        dataJSON: "{}")
                try txn.put(DeliveryRecord(endpointID: i < 300 ? "wh_a" : "wh_ab", event: event, firstAttemptAt: now))
            }
        }
        let newest = try store.read { try $0.deliveries(endpoint: "wh_a", newestFirst: 3) }
        #expect(newest.map(\.eventID) == ["evt_299", "evt_298", "evt_297"])
        #expect(try store.read { try $0.deliveries(endpoint: "wh_a", newestFirst: 1_000) }.map(\.eventID)
                == (0..<300).reversed().map { "evt_\($0)" })
        #expect(try store.read { try $0.deliveries(endpoint: "wh_ab", newestFirst: 10) }.map(\.eventID)
                == ["evt_302", "evt_301", "evt_300"])
        #expect(try store.read { try $0.deliveries(endpoint: "wh_", newestFirst: 10) }.isEmpty)

        var transactions = 0
        while try !store.write([.durable], { try $0.deleteWebhook(id: "wh_a", limit: 128) }) { transactions += 1 }
        #expect(transactions == 2,
                "300 deliveries in batches of 128: two partial transactions, then the last with the endpoint")
        let (endpoint, log, otherLog, due) = try store.read { txn in
            (try txn.webhook(id: "wh_a"), try txn.deliveries(endpoint: "wh_a"), try txn.deliveries(endpoint: "wh_ab"),
             try txn.count(.deliveryDue))
        }
        #expect(endpoint == nil && log.isEmpty)
        #expect(otherLog.count == 3, "the other endpoint keeps its log")
        #expect(due == 3, "the removed deliveries' due entries went with them")
    }

    @Test(arguments: kinds) func receiptDueEntriesFollowNextRedeemAtAndReadOldestFirst(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let now = Timestamp(seconds: 1_780_000_000)
        func key(_ i: Int) -> [UInt8] { [UInt8](repeating: UInt8(i), count: 32) }
        // Five receipts due at now+40, now+30, …, now, one never scheduled.
        try store.write { txn in
            for i in 0..<5 {
                try txn.put(ReceiptRecord(receipt: [0x30, UInt8(i)], nextRedeemAt: now + Int64(40 - 10 * i)),
                            keyID: key(i))
            }
            try txn.put(ReceiptRecord(receipt: [0x30]), keyID: key(9))
        }
        let due = try store.read { try $0.dueReceipts(at: now + 25, limit: 10) }
        #expect(due.map(\.keyID) == [key(4), key(3), key(2)], "only those due by then, oldest first")
        #expect(due.map(\.due) == [now, now + 10, now + 20])
        #expect(try store.read { try $0.dueReceipts(at: now + 100, limit: 2) }.map(\.keyID) == [key(4), key(3)])
        #expect(try store.read { try $0.dueReceipts(at: now - 1, limit: 10) }.isEmpty)

        // Rescheduling moves the entry; unscheduling removes it; storing it again unchanged keeps one.
        try store.write { txn in
            var first = try #require(try txn.receiptRecord(keyID: key(4)))
            let previous = first.nextRedeemAt
            first.nextRedeemAt = now + 1_000
            first.lastStatus = 429
            try txn.put(first, keyID: key(4), previousDue: previous)
            var second = try #require(try txn.receiptRecord(keyID: key(3)))
            let was = second.nextRedeemAt
            second.nextRedeemAt = nil
            try txn.put(second, keyID: key(3), previousDue: was)
            let third = try #require(try txn.receiptRecord(keyID: key(2)))
            try txn.put(third, keyID: key(2), previousDue: third.nextRedeemAt)
        }
        let after = try store.read { txn in
            (try txn.dueReceipts(at: now + 2_000, limit: 10), try txn.count(.receiptDue),
             try txn.receiptRecord(keyID: key(4)))
        }
        #expect(after.0.map(\.keyID) == [key(2), key(1), key(0), key(4)])
        #expect(after.1 == 4, "one entry per scheduled receipt")
        #expect(after.2?.lastStatus == 429 && after.2?.nextRedeemAt == now + 1_000)
        let report = try store.check().databases
        #expect(report.first { $0.database == .receiptDue }?.problems == [], "every due entry has its receipt")
        #expect(report.first { $0.database == .receipts }?.problems.allSatisfy { $0 == "receipt without a device" }
                    == true, "every scheduled receipt has its due entry (no devices were stored)")
    }

    @Test(arguments: kinds) func appleTeamsReadBackInTeamOrder(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let now = Timestamp(seconds: 1_780_000_000)
        try store.write { txn in
            try txn.put(AppleTeamRecord(teamID: "ZZZZZ99999", answers: [200: 4]))
            try txn.put(AppleTeamRecord(teamID: "AAAAA11111", stoppedAt: now, stopReason: "401", answers: [401: 1],
                                        lastAnswerAt: now))
        }
        let (teams, one, none) = try store.read { txn in
            (try txn.appleTeams(), try txn.appleTeam("AAAAA11111"), try txn.appleTeam("BBBBB22222"))
        }
        #expect(teams.map(\.teamID) == ["AAAAA11111", "ZZZZZ99999"])
        #expect(one?.stoppedAt == now && one?.answers == [401: 1] && none == nil)
    }

    @Test(arguments: kinds) func aThrowingWriteRollsBackEverything(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        #expect(throws: Boom.self) {
            try store.write { txn in
                try txn.put(.orgs, Array("acme".utf8), [1])
                _ = try txn.consumeChallenge(id: [7], expiry: 100)
                throw Boom()
            }
        }
        #expect(try store.entryCounts().values.reduce(0, +) == 1, "only the schema marker in meta")
    }

    @Test(arguments: kinds) func challengesAreSingleUseAndSweepsTakeTheOldestExpiredFirst(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        #expect(try store.write([.ephemeral]) { try $0.consumeChallenge(id: [1], expiry: 100) })
        #expect(try !store.write([.ephemeral]) { try $0.consumeChallenge(id: [1], expiry: 100) })
        try store.write([.ephemeral]) { txn in
            for (i, expiry) in [50, 150, 90, 99, 300].enumerated() {
                _ = try txn.consumeChallenge(id: [UInt8(10 + i)], expiry: Int64(expiry))
            }
        }
        // Expired before 100: 50, 90, 99 (100 itself is not before 100).
        #expect(try store.write([.ephemeral]) { try $0.sweepExpired(.challenges, now: 100, limit: 2) } == 2)
        #expect(try store.read { try $0.isChallengeUsed(id: [10], expiry: 50) } == false, "the oldest went first")
        #expect(try store.read { try $0.isChallengeUsed(id: [13], expiry: 99) } == true)
        #expect(try store.write([.ephemeral]) { try $0.sweepExpired(.challenges, now: 100, limit: 10) } == 1)
        #expect(try store.read { try $0.count(.challenges) } == 3)
    }

    /// A consumption whose outcome is read later (`consumeChallengeLater`) is as single-use as
    /// the immediate one, within a transaction and across transactions, and is rolled back
    /// with its transaction.
    @Test(arguments: kinds) func aLaterConsumptionIsSingleUseToo(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let outcomes = try store.write([.ephemeral]) { txn -> [Bool] in
            let first = try txn.consumeChallengeLater(id: [1], expiry: 100)
            let hits = try txn.hitRateWindow("ip:1", windowEnd: 60)
            let second = try txn.consumeChallengeLater(id: [1], expiry: 100)
            return [try first(), hits == 1, try second()]
        }
        #expect(outcomes == [true, true, false])
        #expect(try !store.write([.ephemeral]) { try $0.consumeChallengeLater(id: [1], expiry: 100)() })
        #expect(throws: Boom.self) {
            try store.write([.ephemeral]) { txn in
                #expect(try txn.consumeChallengeLater(id: [2], expiry: 100)())
                throw Boom()
            }
        }
        #expect(try store.write([.ephemeral]) { try $0.consumeChallengeLater(id: [2], expiry: 100)() },
                "the rolled-back consumption left nothing")
    }

    @Test(arguments: kinds) func rateWindowsCount(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        for expected in 1...5 as ClosedRange<UInt32> {
            #expect(try store.write([.ephemeral]) { try $0.hitRateWindow("ip:1", windowEnd: 60) } == expected)
        }
        #expect(try store.write([.ephemeral]) { try $0.hitRateWindow("ip:2", windowEnd: 60) } == 1)
        #expect(try store.write([.ephemeral]) { try $0.hitRateWindow("ip:1", windowEnd: 120) } == 1)
    }

    /// A counter is a u32 that wraps; a stored value of another length counts as 0.
    @Test(arguments: kinds) func countersWrapAndAValueOfAnotherLengthCountsAsZero(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let counts = try store.write([.ephemeral]) { txn -> [UInt32] in
            try txn.put(.rates, [1], [0xFF, 0xFF, 0xFF, 0xFE])
            try txn.put(.rates, [2], [0, 7])
            return [try txn.increment(.rates, [1]), try txn.increment(.rates, [1]), try txn.increment(.rates, [2]),
                    try txn.increment(.rates, [3])]
        }
        #expect(counts == [0xFFFF_FFFF, 0, 1, 1])
        #expect(try store.read { try $0.get(.rates, [1]) } == [0, 0, 0, 0])
    }

    /// The monthly sweep deletes past months' counted devices, oldest first and at most
    /// `limit` per call, and never an entry of the current month or a later one.
    @Test(arguments: kinds) func theCountedDeviceSweepDeletesOnlyPastMonths(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let counted = Transaction.CountedDevice(apiKey: false, days: 1)
        let months = ["2026-10", "2026-11", "2026-12", "2027-01"]
        try store.write([.durable]) { txn in
            for month in months {
                for (org, i) in [("a", 1), ("b", 2), ("zz", 3)] {
                    try txn.putCountedDevice(counted, org: org, month: month,
                                             identity: [UInt8](repeating: UInt8(i), count: 16))
                }
            }
        }
        func left() throws -> [String: Int] {
            try store.read { txn in
                var byMonth = [String: Int]()
                for month in months {
                    byMonth[month] = try ["a", "b", "zz"].enumerated().filter { i, org in
                        try txn.countedDevice(org: org, month: month,
                                              identity: [UInt8](repeating: UInt8(i + 1), count: 16)) != nil
                    }.count
                }
                return byMonth
            }
        }
        try store.write([.durable]) { try $0.sweepCountedDevices(before: "2026-12", limit: 4) }
        #expect(try left() == ["2026-10": 0, "2026-11": 2, "2026-12": 3, "2027-01": 3],
                "the oldest month first, 4 at most")
        try store.write([.durable]) { txn in
            try txn.sweepCountedDevices(before: "2026-12", limit: 4)
            // Read after the (on PostgreSQL, queued) sweep in the same transaction: it is seen.
            #expect(try txn.countedDevice(org: "a", month: "2026-11", identity: [UInt8](repeating: 1, count: 16))
                        == nil)
        }
        #expect(try store.write([.durable]) {
            try $0.deleteBelow(.usageDevices, Transaction.usageDevicePrefix(month: "2026-12"), limit: 4)
        } == 0)
        #expect(try left() == ["2026-10": 0, "2026-11": 0, "2026-12": 3, "2027-01": 3])
    }

    /// Returning devices are counted in the shard each transaction draws; the report adds the
    /// shards to the month record's own day figures (stores written before `usage_days` kept
    /// returning devices there), and only the month asked for, day by day.
    @Test(arguments: kinds) func returningDevicesAddUpAcrossShards(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        #expect(try store.read { try $0.usageMonthReport(org: "a", month: "2026-12") } == nil,
                "nothing counted: no report")
        var shards = Set<UInt8>()
        for _ in 0..<40 {
            shards.insert(try store.write([.durable]) { txn in
                try txn.countReturningDevice(org: "a", month: "2026-12", day: 3)
                try txn.countReturningDevice(org: "a", month: "2026-12", day: 3)
                return txn.spread
            })
        }
        try store.write([.durable]) { txn in
            try txn.countReturningDevice(org: "a", month: "2026-12", day: 31)
            try txn.countReturningDevice(org: "a", month: "2026-11", day: 3)
            try txn.countReturningDevice(org: "ab", month: "2026-12", day: 3)
        }
        #expect(shards.count > 1 && shards.allSatisfy { Int($0) < Transaction.spreadWays },
                "40 transactions drew \(shards.count) shards")
        #expect(try store.read { try $0.returningDevices(org: "a", month: "2026-12") }.enumerated()
                    .filter { $0.element > 0 }.map { [$0.offset + 1, Int($0.element)] }
                == [[3, 80], [31, 1]])
        var record = UsageMonthRecord()
        record.activeDevices = 2
        record.countApp("T.app")
        record.countApp("T.app")
        record.note(day: 1, new: true, active: true)
        record.note(day: 3, new: true, active: true)
        record.note(day: 3, new: false, active: true)  // a returning device, as counted before usage_days
        try store.write([.durable]) { try $0.put(record, org: "a", month: "2026-12") }
        let report = try #require(try store.read { try $0.usageMonthReport(org: "a", month: "2026-12") })
        #expect(report.days.count == 31 && report.days[0] == .init(newDevices: 1, activeDevices: 1))
        #expect(report.days[2] == .init(newDevices: 1, activeDevices: 82)
                    && report.days[30] == .init(newDevices: 0, activeDevices: 1))
        #expect(report.activeDevices == 2)
        #expect(try store.read { try $0.usageMonth(org: "a", month: "2026-12") } == record,
                "the record itself is unchanged")
        #expect(try store.read { try $0.usageMonthReport(org: "a", month: "2026-11") }?.days[2].activeDevices == 1,
                "a month of day counts alone")
        let check = try store.check()
        #expect(check.isConsistent && check.databases.first { $0.database == .usageDays }?.entries ?? 0 >= 4,
                "\(check.databases.flatMap(\.problems))")
    }

    /// Appended outbox events come back in the order they were queued, under 8-byte keys, the
    /// ones of one transaction consecutive; an event of a rolled-back transaction is not there.
    @Test(arguments: kinds) func appendedEventsKeepTheirOrder(_ kind: Kind) throws {
        struct Refused: Error {}
        let f = try Fixture(kind), store = try f.open()
        func event(_ n: Int) -> OutboxEvent {
            OutboxEvent(id: "evt_\(n)", event: "device.new", org: "acme", createdAt: Timestamp(seconds: 1_790_000_000),
                        dataJSON: "{}")
        }
        try store.write([.durable]) { txn in try txn.enqueue(event(1)); try txn.enqueue(event(2)) }
        #expect(throws: Refused.self) {
            try store.write([.durable]) { txn in try txn.enqueue(event(99)); throw Refused() }
        }
        try store.write([.durable]) { txn in try txn.enqueue(event(3)) }
        let queued = try store.read { try $0.outbox() }
        #expect(queued.map(\.event.id) == ["evt_1", "evt_2", "evt_3"])
        #expect(queued[1].sequence == queued[0].sequence + 1, "one transaction's events are consecutive")
        #expect(queued[2].sequence > queued[1].sequence)
        try store.write([.durable]) { txn in for (sequence, _) in queued { try txn.dequeue(sequence) } }
        try store.write([.durable]) { txn in try txn.enqueue(event(4)) }
        #expect(try store.read { try $0.outbox().map(\.event.id) } == ["evt_4"])
        #expect(try store.check().isConsistent)
    }

    @Test(arguments: kinds) func typedRecordsRoundTripAndTheCheckPasses(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let now = Timestamp(seconds: 1_790_000_000)
        try store.write { txn in
            try txn.put(OrgRecord(name: "acme", createdAt: now))
            try txn.put(AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", createdAt: now))
            try txn.put(DeviceRecord.sample(keyID: Array(repeating: 3, count: 32), deviceID: "dev-1", now: now))
        }
        let found = try store.read { txn in
            (try txn.org(named: "acme")?.name, try txn.device(keyID: Array(repeating: 3, count: 32))?.deviceID,
             try txn.device(deviceID: "dev-1")?.keyID, try txn.tenancyGeneration())
        }
        #expect(found.0 == "acme" && found.1 == "dev-1" && found.2 == Array(repeating: 3, count: 32) && found.3 == 2,
                "each org or app write bumps the tenancy generation")
        let report = try store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems)) \(report.crossProblems)")
    }

    @Test(arguments: kinds) func aSubjectGoesWithItsLastDeviceUnlessItHoldsAGrant(_ kind: Kind) throws {
        let f = try Fixture(kind), store = try f.open()
        let now = Timestamp(seconds: 1_790_000_000)
        let keys = (1...2).map { [UInt8](repeating: UInt8($0), count: 32) }
        let ids = { try store.read { try $0.subjects(org: "acme") }.map(\.subjectID) }
        try store.write { txn in
            try txn.put(OrgRecord(name: "acme", createdAt: now))
            try txn.put(AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", createdAt: now))
            try txn.put(SubjectRecord(subjectID: "granted", createdAt: now,
                                      entitlements: [.init(name: "premium", grantedAt: now, until: now + 1)]),
                        org: "acme")
            for (i, key) in keys.enumerated() {
                var device = DeviceRecord.sample(keyID: key, deviceID: "dev-\(i)", now: now)
                try txn.link(&device, to: "shared", org: "acme", now: now)
                try txn.put(device)
            }
        }
        func move(_ key: [UInt8], to subject: String) throws {
            try store.write { txn in
                var device = try #require(try txn.device(keyID: key))
                try txn.link(&device, to: subject, org: "acme", now: now)
                try txn.put(device)
            }
        }
        try move(keys[0], to: "granted")
        #expect(try ids() == ["granted", "shared"], "shared still has a device")
        for i in 1...50 { try move(keys[1], to: "s\(i)") }
        #expect(try ids() == ["granted", "s50"], "one record per device, not per value it sent")
        try move(keys[0], to: "")
        try move(keys[1], to: "")
        #expect(try ids() == ["granted"],
                "a subject holding an entitlement (even an ended one) is the operator's and stays")
        let report = try store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems)) \(report.crossProblems)")
    }

    @Test(arguments: kinds) func reopeningKeepsWhatWasCommitted(_ kind: Kind) throws {
        let f = try Fixture(kind)
        do {
            let store = try f.open()
            _ = try store.write([.durable]) { txn in try txn.put(.meta, [9], [9]) }
        }
        let store = try f.open()
        #expect(try store.read { try $0.get(.meta, [9]) } == [9])
        let before = store.durableVersion
        _ = try store.write([.durable]) { txn in try txn.put(.meta, [9], [10]) }
        #expect(store.durableVersion != before, "a write changes the version callers cache against")
    }
}

extension DeviceRecord {
    static func sample(keyID: [UInt8], deviceID: String, now: Timestamp) -> DeviceRecord {
        DeviceRecord(keyID: keyID, deviceID: deviceID, appID: "ABCDE12345.com.example.app",
                     publicKey: [4] + [UInt8](repeating: 1, count: 64),
                     environment: .production, createdAt: now)
    }
}
