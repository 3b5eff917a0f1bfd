import AttestCore
@testable import AttestStore
import Foundation
import Testing

/// PostgreSQL only: several connections (as several hosts have) writing the same rows at
/// once. LMDB's single writer makes these trivially true there.
@Suite(.enabled(if: StoreConformance.kinds.contains(.postgres), "needs ATTEST_TEST_POSTGRES_URL"))
struct PostgresConcurrencyTests {
    /// Results gathered from threads.
    final class Results<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var items = [T]()
        func append(_ item: T) { lock.lock(); items.append(item); lock.unlock() }
        var all: [T] { lock.lock(); defer { lock.unlock() }; return items }
    }

    static let writers = 4

    /// A fresh PostgreSQL fixture (schema created); then `body` on `writers` threads at once,
    /// each with its own `Store` (its own connection, as a separate host has), or `nil` when
    /// that store could not open.
    static func concurrently(rounds: Int = 1, adjust: (inout StoreOptions) -> Void = { _ in },
                             _ body: @Sendable @escaping (_ round: Int, Store?) -> Void) throws
        -> StoreConformance.Fixture {
        let f = try StoreConformance.Fixture(.postgres)
        adjust(&f.options)
        _ = try f.open()
        let options = f.options, path = f.dir.path
        for round in 0..<rounds {
            DispatchQueue.concurrentPerform(iterations: writers) { _ in
                body(round, try? Store(directory: path + "/store", options: options))
            }
        }
        return f
    }

    /// Every connection adds one to a 2-byte counter under `.meta` `key`, 25 times, each in its
    /// own serializable read-modify-write; the errors (none expected) and the final count.
    static func incrementRace(key: UInt8, adjust: (inout StoreOptions) -> Void = { _ in }) throws
        -> (failures: [String], total: [UInt8]?) {
        let failures = Results<String>()
        let f = try concurrently(adjust: adjust) { _, store in
            do {
                guard let store else { throw StoreError(.open, "the store did not open") }
                for _ in 0..<25 {
                    try store.write([.durable]) { txn in
                        let n = try txn.get(.meta, [key]).map { UInt32($0[0]) << 8 | UInt32($0[1]) } ?? 0
                        try txn.put(.meta, [key], [UInt8((n + 1) >> 8), UInt8((n + 1) & 0xFF)])
                    }
                }
            } catch { failures.append("\(error)") }
        }
        return (failures.all, try f.open().read { try $0.get(.meta, [key]) })
    }

    @Test func serializableReadModifyWritesLoseNothing() throws {
        let (failures, total) = try Self.incrementRace(key: 5)
        #expect(failures.isEmpty)
        #expect(total == [0, UInt8(Self.writers * 25)], "every increment of \(Self.writers) × 25 kept")
    }

    /// The same race with one retry only: a write that lost once runs alone on its last
    /// run (`EXCLUSIVE` on `ae_write_gate`), so none gives up. Without the gate, some of these
    /// 100 contended writes lose both runs and fail with `busy`.
    @Test func aWriteThatKeepsLosingRunsAloneInsteadOfGivingUp() throws {
        let (failures, total) = try Self.incrementRace(key: 6) { $0.maxRetries = 1; $0.exclusiveAfterConflicts = 1 }
        #expect(failures.isEmpty)
        #expect(total == [0, UInt8(Self.writers * 25)], "every increment of \(Self.writers) × 25 kept")
    }

    /// Two hosts queue webhook events at once: the second commits between the first's snapshot
    /// and its commit. Numbered by the sequence, neither reads the other's key, so with no
    /// retries allowed both still commit (numbered by the outbox's last key, the first lost).
    @Test func concurrentAppendsDoNotConflict() throws {
        let f = try StoreConformance.Fixture(.postgres)
        f.options.maxRetries = 0
        let first = try f.open(), second = try Store(directory: f.dir.path + "/store", options: f.options)
        let event = OutboxEvent(id: "evt_1", event: "device.new", org: "acme",
                                createdAt: Timestamp(seconds: 1_790_000_000), dataJSON: "{}")
        try first.write([.durable]) { txn in
            _ = try txn.get(.meta, [1])  // the snapshot is taken
            try txn.enqueue(event)
            try second.write([.durable]) { txn in try txn.enqueue(event) }
        }
        let keys = try first.read { try $0.outbox().map(\.sequence) }
        #expect(keys.count == 2 && Set(keys).count == 2)
    }

    @Test func oneChallengeIsConsumedOnceAcrossConnections() throws {
        let wins = Results<Bool>()
        _ = try Self.concurrently(rounds: 10) { round, store in
            // Odd rounds consume the way admission does: the insert queued, its outcome read later.
            wins.append((try? store?.write([.ephemeral]) { txn in
                round % 2 == 0 ? try txn.consumeChallenge(id: [UInt8(round)], expiry: 1_000)
                    : try txn.consumeChallengeLater(id: [UInt8(round)], expiry: 1_000)()
            }) == true)
        }
        #expect(wins.all.count == 10 * Self.writers)
        #expect(wins.all.filter { $0 }.count == 10, "exactly one winner per challenge")
    }

    @Test func rateWindowsCountEveryHitUnderReadCommitted() throws {
        let seen = Results<UInt32>()
        _ = try Self.concurrently { _, store in
            guard let store else { return }
            for _ in 0..<25 {
                if let n = try? store.write([.ephemeral], { try $0.hitRateWindow("org:acme", windowEnd: 60) }) {
                    seen.append(n)
                }
            }
        }
        #expect(seen.all.sorted() == Array(1...UInt32(Self.writers * 25)), "each hit saw its own count")
    }
}

extension PostgresConcurrencyTests {
    /// The monthly admission's shape (read the month's totals, refuse at the limit, else count
    /// the device and write the totals back), raced from every connection: exactly the limit.
    @Test func admissionAtALimitIsExactAcrossConnections() throws {
        let admitted = Results<Bool>()
        let limit: UInt32 = 10
        _ = try Self.concurrently(rounds: 3) { r, store in
            guard let store else { return }
            for i in 0..<5 {
                let identity = Array("device-\(r)-\(i)-\(UInt32.random(in: 0...UInt32.max))".utf8)
                let ok = try? store.write([.durable]) { txn -> Bool in
                    var totals = try txn.usageMonth(org: "acme", month: "2026-12") ?? UsageMonthRecord()
                    if try txn.countedDevice(org: "acme", month: "2026-12", identity: identity) != nil { return true }
                    guard totals.activeDevices < limit else { return false }
                    totals.activeDevices += 1
                    try txn.putCountedDevice(.init(apiKey: false, days: 1), org: "acme", month: "2026-12",
                                             identity: identity)
                    try txn.put(totals, org: "acme", month: "2026-12")
                    return true
                }
                admitted.append(ok == true)
            }
        }
        #expect(admitted.all.filter { $0 }.count == Int(limit), "exactly the limit admitted")
    }

    /// Every connection counts returning devices' first request of one day, as a fleet does
    /// just after midnight: each one is in the report, none lost, none counted twice, and the
    /// month's record (which every one of them used to rewrite) is not written at all.
    @Test func returningDevicesAtADayStartAreAllCounted() throws {
        let failures = Results<String>()
        let f = try Self.concurrently { _, store in
            do {
                guard let store else { throw StoreError(.open, "the store did not open") }
                for _ in 0..<10 {
                    try store.write([.durable]) { txn in
                        for _ in 0..<3 { try txn.countReturningDevice(org: "acme", month: "2026-12", day: 4) }
                    }
                }
            } catch { failures.append("\(error)") }
        }
        #expect(failures.all.isEmpty)
        let store = try f.open()
        #expect(try store.read { try $0.usageMonthReport(org: "acme", month: "2026-12") }?.days.last?.activeDevices
                    == UInt32(Self.writers * 30))
        #expect(try store.read { try $0.usageMonth(org: "acme", month: "2026-12") } == nil)
    }
}
