import AttestCore
import AttestStore
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct StoreTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    func open(_ options: StoreOptions = StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16)) throws -> Store {
        try Store(directory: dir.path + "/store", options: options)
    }

    struct Boom: Error {}

    /// Fault-suite regression: an environment that cannot be opened (here data.mdb is a
    /// directory; in the suite, a read-only data directory) throws once, closing LMDB once.
    /// Closing it twice was a double free that aborted the process.
    @Test func anEnvironmentThatCannotOpenThrowsWithoutADoubleFree() throws {
        #expect(mkdir(dir.path + "/store", 0o700) == 0 && mkdir(dir.path + "/store/durable", 0o700) == 0
                && mkdir(dir.path + "/store/durable/data.mdb", 0o700) == 0, "a directory where data.mdb goes")
        #expect(throws: StoreError.self, "opening fails cleanly") { try open() }
        #expect(throws: StoreError.self, "and again: nothing was left half-closed") { try open() }
    }

    @Test func writesCommitAndReadsSeeThem() throws {
        let store = try open()
        try store.write { txn in try txn.put(OrgRecord(name: "acme", createdAt: now)) }
        let org = try store.read { txn in try txn.org(named: "acme") }
        #expect(org?.name == "acme")
        #expect(try store.entryCounts()[.orgs] == 1)
    }

    @Test func aThrowingWriteLeavesNothingBehind() throws {
        let store = try open()
        #expect(throws: Boom.self) {
            try store.write { txn in
                try txn.put(OrgRecord(name: "acme", createdAt: now))
                _ = try txn.consumeChallenge(id: [1], expiry: 10)
                throw Boom()
            }
        }
        let counts = try store.entryCounts()
        #expect(counts[.orgs] == 0 && counts[.challenges] == 0, "both environments rolled back")
    }

    @Test func reopeningKeepsCommittedData() throws {
        do {
            let store = try open()
            try store.write { txn in try txn.put(AppRecord(teamID: "T", bundleID: "b", org: "o", createdAt: now)) }
        }
        let again = try open()
        #expect(try again.read { try $0.app(id: "T.b") }?.org == "o")
    }

    @Test func challengeConsumptionIsSingleUse() throws {
        let store = try open()
        let id: [UInt8] = Array(repeating: 5, count: 16)
        #expect(try store.write([.ephemeral]) { try $0.consumeChallenge(id: id, expiry: 100) } == true)
        #expect(try store.write([.ephemeral]) { try $0.consumeChallenge(id: id, expiry: 100) } == false,
                "second use refused")
        #expect(try store.read { try $0.isChallengeUsed(id: id, expiry: 100) })
        #expect(try store.read { try $0.isChallengeUsed(id: id, expiry: 101) } == false,
                "the expiry is part of the key")
    }

    @Test func sweepsRemoveOnlyExpiredRecords() throws {
        let store = try open()
        try store.write([.ephemeral]) { txn in
            for e in Int64(1)...20 { _ = try txn.consumeChallenge(id: [UInt8(e)], expiry: e * 10) }
        }
        // now = 105: expiries 10…100 (10 records) are expired; sweep at most 4 at a time.
        let first = try store.write([.ephemeral]) { try $0.sweepExpired(.challenges, now: 105, limit: 4) }
        #expect(first == 4)
        var total = first
        while true {
            let n = try store.write([.ephemeral]) { try $0.sweepExpired(.challenges, now: 105, limit: 4) }
            if n == 0 { break }
            total += n
        }
        #expect(total == 10)
        #expect(try store.entryCounts()[.challenges] == 10)
        for e in Int64(11)...20 {
            #expect(try store.read { try $0.isChallengeUsed(id: [UInt8(e)], expiry: e * 10) },
                    "unexpired \(e * 10) kept")
        }
    }

    @Test func rateWindowsCountHitsPerBucket() throws {
        let store = try open()
        for _ in 0..<3 { _ = try store.write([.ephemeral]) { try $0.hitRateWindow("org:a", windowEnd: 60) } }
        #expect(try store.write([.ephemeral]) { try $0.hitRateWindow("org:a", windowEnd: 60) } == 4)
        #expect(try store.write([.ephemeral]) { try $0.hitRateWindow("org:b", windowEnd: 60) } == 1)
        #expect(try store.write([.ephemeral]) { try $0.hitRateWindow("org:a", windowEnd: 120) } == 1,
                "a new window starts at 1")
        #expect(try store.write([.ephemeral]) { try $0.sweepExpired(.rates, now: 61, limit: 10) } == 2)
    }

    @Test func aFullMapIsACleanErrorAndTheStoreStaysUsable() throws {
        let store = try open(StoreOptions(durableMapSizeMiB: 1, ephemeralMapSizeMiB: 1))
        try store.write { txn in try txn.put(OrgRecord(name: "keep", createdAt: now)) }
        var failure: StoreError? = nil
        outer: for batch in 0..<1000 {
            do {
                try store.write([.durable]) { txn in
                    for i in 0..<100 {
                        try txn.put(.receipts, Array(String(format(batch * 100 + i)).utf8),
                                    [1] + [UInt8](repeating: 1, count: 4000))
                    }
                }
            } catch let error as StoreError {
                failure = error
                break outer
            }
        }
        #expect(failure?.code == .full, "a 1 MiB map fills up with MDB_MAP_FULL")
        #expect(try store.read { try $0.org(named: "keep") } != nil, "earlier data still readable")
        try store.write { txn in _ = try txn.consumeChallenge(id: [1], expiry: 1) }
    }

    @Test func devicesAreFoundByKeyAndDeviceID() throws {
        let store = try open()
        let key = [UInt8](repeating: 3, count: 32)
        let device = DeviceRecord(keyID: key, deviceID: "dev-3", appID: "T.b",
                                  publicKey: [4] + [UInt8](repeating: 1, count: 64),
                                  environment: .production, createdAt: now)
        try store.write { try $0.put(device) }
        #expect(try store.read { try $0.device(keyID: key) } == device)
        #expect(try store.read { try $0.device(deviceID: "dev-3") }?.keyID == key)
        #expect(try store.read { try $0.devices() }.count == 1)
    }

    @Test func fingerprintsCountDistinctKeys() throws {
        let store = try open()
        let a = [UInt8](repeating: 1, count: 32), b = [UInt8](repeating: 2, count: 32)
        #expect(try store.write { try $0.noteFingerprint("fp", appID: "T.a", keyID: a, at: now) }.keys == 1)
        #expect(try store.write { try $0.noteFingerprint("fp", appID: "T.a", keyID: a, at: now) }.keys == 1,
                "the same key again does not count")
        #expect(try store.write { try $0.noteFingerprint("fp", appID: "T.a", keyID: b, at: now + 5) }.keys == 2)
        #expect(try store.read { try $0.fingerprintKeyCount("fp", appID: "T.a") } == 2)
        #expect(try store.read { try $0.fingerprintKeyCount("fp", appID: "T.b") } == 0, "scoped to the app")
        #expect(try store.write { try $0.noteFingerprint("fp", appID: "T.b", keyID: b, at: now) }.keys == 1,
                "another app's fingerprint is its own")
        let history = try store.read { try $0.lineage(.fingerprint("fp", appID: "T.a")) }?.history
        #expect(history == [.init(keyID: a, attestedAt: now), .init(keyID: b, attestedAt: now + 5)],
                "each key with its date")
    }

    @Test func intervalSyncStoresAndCloses() throws {
        do {
            let store = try open(StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16,
                                              sync: .interval(milliseconds: 5)))
            try store.write { try $0.put(OrgRecord(name: "i", createdAt: now)) }
        }
        #expect(try open().read { try $0.org(named: "i") } != nil)
    }
}

private func format(_ n: Int) -> String { String(n) }
