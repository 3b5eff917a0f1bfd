import AttestCore
import AttestStore
import Testing

/// Lineages (fingerprint records v2), the flag log and subjects (issue #9).
@Suite struct LineageStoreTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    func open() throws -> Store {
        try Store(directory: dir.path + "/store", options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16))
    }

    func key(_ b: UInt8) -> [UInt8] { [UInt8](repeating: b, count: 32) }

    @Test func aVersion1FingerprintRecordReadsAsOneKeyOfUnknownDate() throws {
        var w = BinaryWriter(version: 1)
        w.u32(3)
        w.data(key(9))
        let old = try LineageRecord(encoded: w.bytes)
        #expect(old.keys == 3 && old.flags.isEmpty && old.failures.isEmpty)
        #expect(old.history == [.init(keyID: key(9), attestedAt: Timestamp(seconds: 0))] && old.lastAttestedAt == nil)
        var next = old
        next.noteAttestation(key(10), at: now)
        #expect(next.keys == 4, "the count carries on from the old record")
        #expect(try LineageRecord(encoded: next.encoded()) == next, "written back as v2")
    }

    @Test func historyKeepsTheLatest32AndFailuresTheLast24Hours() throws {
        var record = LineageRecord()
        for i in 0..<40 { record.noteAttestation(key(UInt8(i)), at: now + Int64(i)) }
        #expect(record.keys == 40 && record.history.count == LineageRecord.historyLimit)
        #expect(record.history.first?.keyID == key(8) && record.lastAttestedAt == now + 39)
        #expect(record.attestations(within: 10, now: now + 39) == 10, "keys 30…39")
        record.noteFailure(.failed, at: now)
        record.noteFailure(.forged, at: now + 10)
        record.noteFailure(.forged, at: now + 86_400)
        #expect(record.failures.count == 2, "the failure 24 h old was dropped at the next write")
        #expect(record.failures(.forged, now: now + 86_400) == 2 && record.failures(.failed, now: now + 86_400) == 0)
        #expect(record.failures(.forged, now: now + 86_410) == 1, "and they age out when read later")
        #expect(try LineageRecord(encoded: record.encoded()) == record)
    }

    @Test func forgedAssertionsNeverPushOutFailedOnes() {
        var record = LineageRecord()
        record.noteFailure(.failed, at: now)
        for i in 0..<(LineageRecord.failureLimit + 10) { record.noteFailure(.forged, at: now + 1 + Int64(i)) }
        #expect(record.failures.count == LineageRecord.failureLimit)
        #expect(record.failures(.failed, now: now + 100) == 1, "the device's own failure stays")
        var full = LineageRecord()
        for i in 0..<LineageRecord.failureLimit { full.noteFailure(.forged, at: now + Int64(i)) }
        full.noteFailure(.failed, at: now + 100)
        #expect(full.failures(.failed, now: now + 100) == 1, "a failed one joins a log full of forged ones")
    }

    @Test func aDeviceWithoutFingerprintHasALineageOfItsOwn() throws {
        let store = try open()
        var device = DeviceRecord(keyID: key(1), deviceID: "d1", appID: "ABCDE12345.com.a", publicKey: [4],
                                  environment: .production, operatorFlags: [.jailbreak], createdAt: now)
        let implied = try store.read { try $0.lineage(of: device) }
        #expect(implied.keys == 1 && implied.flags == [.jailbreak] && implied.history.map(\.keyID) == [key(1)])
        #expect(try store.read { try $0.lineage(.of(device)) } == nil, "nothing written until something happens")
        device.fingerprint = "fp"
        #expect(LineageKey.of(device) == .fingerprint("fp", appID: "ABCDE12345.com.a"))
    }

    @Test func flagChangesAreKeptInOrderPerLineage() throws {
        let store = try open()
        let a = LineageKey.fingerprint("fp", appID: "ABCDE12345.com.a"),
            b = LineageKey.fingerprint("fp2", appID: "ABCDE12345.com.a")
        let changes = [
            FlagChange(at: now, previous: [], flags: [.blocked], keyID: key(1), deviceID: "d1", reason: "fraud ring"),
            FlagChange(at: now, previous: [.blocked], flags: [], keyID: key(1), deviceID: "d1", reason: "mistake"),
            FlagChange(at: now + 60, previous: [], flags: [.jailbreak], keyID: key(2), deviceID: "d2", reason: ""),
        ]
        try store.write { txn in
            for c in changes { try txn.appendFlagChange(c, a) }
            try txn.appendFlagChange(changes[0], b)
        }
        #expect(try store.read { try $0.flagChanges(a) } == changes, "two in the same second keep their order")
        #expect(try store.read { try $0.flagChanges(b) }.count == 1)
        #expect([DeviceRecord.OperatorFlags.jailbreak, .blocked].map(\.names) == ["jailbroken", "blocked"]
                    && DeviceRecord.OperatorFlags([]).names == "none")
    }

    @Test func subjectsRoundTripAndLinksMove() throws {
        let store = try open()
        let subject = SubjectRecord(subjectID: "house-1", createdAt: now, entitlements: [
            .init(name: "premium", grantedAt: now, until: now + 100),
            .init(name: "family", grantedAt: now, until: nil)])
        #expect(try SubjectRecord(encoded: subject.encoded()) == subject)
        #expect(subject.active(at: now + 100).map(\.name) == ["family"], "an entitlement ends at its until")
        var device = DeviceRecord(keyID: key(1), deviceID: "d1", appID: "ABCDE12345.com.a", publicKey: [4],
                                  environment: .production, createdAt: now)
        try store.write { txn in
            try txn.put(subject, org: "acme")
            try txn.link(&device, to: "house-1", org: "acme", now: now)
            try txn.put(device)
        }
        #expect(try store.read { try $0.subjectDevices(org: "acme", subjectID: "house-1") } == [key(1)])
        #expect(try store.read { try $0.subjectDevices(org: "other", subjectID: "house-1") }.isEmpty,
                "scoped to the organization")
        try store.write { txn in try txn.link(&device, to: "house-2", org: "acme", now: now + 1) }
        #expect(device.subjectID == "house-2")
        #expect(try store.read { try $0.subjectDevices(org: "acme", subjectID: "house-1") }.isEmpty)
        #expect(try store.read { try $0.subjects(org: "acme") }.map(\.subjectID) == ["house-1", "house-2"],
                "created at its first link")
        try store.write { txn in try txn.link(&device, to: "", org: "acme", now: now + 2) }
        #expect(try store.read { try $0.subjectDevices(org: "acme", subjectID: "house-2") }.isEmpty
                    && device.subjectID.isEmpty)
    }

    @Test func aVersion2DeviceReadsWithNoScoreYet() throws {
        var d = DeviceRecord(keyID: [], deviceID: "d", appID: "A.b", publicKey: [4], environment: .production,
                             createdAt: now)
        d.lastRiskScore = 42
        #expect(try DeviceRecord(encoded: d.encoded()).lastRiskScore == 42)
        var v2 = d.encoded().dropLast(1 + 12 + 1)  // the score, and v4's metric, its time and the receipt check
        v2[v2.startIndex] = 2
        #expect(try DeviceRecord(encoded: Array(v2)).lastRiskScore == nil)
    }
}
