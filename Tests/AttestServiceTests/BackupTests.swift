@testable import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

@Suite struct BackupTests {
    @Test(.enabled(if: !Fixture.onPostgres, "LMDB only"))
    func aBackupTakenWhileOpenRestoresTheDevicesKeysAndConfiguration() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        // The receipt queue and the Apple teams are databases of the durable store like the others.
        let due = flow.fixture.clock.now() + 60
        try flow.context.store.write { txn in
            var receipt = try #require(try txn.receiptRecord(keyID: flow.device.keyID))
            let previous = receipt.nextRedeemAt
            receipt.nextRedeemAt = due
            try txn.put(receipt, keyID: flow.device.keyID, previousDue: previous)
            try txn.put(AppleTeamRecord(teamID: "ABCDE12345", answers: [200: 2]))
        }
        // So are feature flags and What's New (validate wrote the device's app versions).
        let now = flow.fixture.clock.now(), noteID = [UInt8](repeating: 4, count: 16)
        let lineage = LineageKey.of(try #require(try flow.storedDevice()))
        let flags = FeatureFlagAppRecord(generation: 2, environments: [.init(name: "production", createdAt: now)],
                                         flagCount: 1, overrideCount: 1, noteCount: 1)
        let flag = FeatureFlagRecord(key: "dark", type: .bool, description: "", createdAt: now, updatedAt: now,
                                     defaults: [.init(environment: "production", valueJSON: "true")])
        let override = FeatureFlagOverrideRecord(subject: .sdk("qa-1"), flagKey: "dark", valueJSON: "false",
                                                 expiresAt: nil, createdAt: now, note: "")
        let note = ReleaseNoteRecord(id: noteID, version: "2.1.0", title: "New", body: "", publishAt: now,
                                     createdAt: now, updatedAt: now)
        try flow.context.store.write { txn in
            try txn.put(flags, appID: Fixture.appID)
            try txn.put(flag, appID: Fixture.appID)
            try txn.put(override, appID: Fixture.appID)
            try txn.put(note, appID: Fixture.appID)
            _ = try txn.markNoteSeen(lineage: lineage, note: noteID, at: now)
        }
        let versions = try #require(try flow.context.store.read { try $0.deviceVersions(lineage: lineage) })
        // A team's DeviceCheck key lives in keys/apple/, a directory below keys/.
        let appleKey = try SigningKey.generate(.p256).pemEncoded
        try AppleKeyStore(flow.fixture.data).add(try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567",
                                                                    pem: appleKey))
        let file = flow.fixture.path + "/../" + UUID().uuidString + ".aebk"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let summary = try Backup.take(data: flow.fixture.data, store: flow.context.store, to: file,
                                      now: flow.fixture.clock.now())
        #expect(summary.skipped.isEmpty, "\(summary.skipped)")
        #expect(summary.header.schema == Store.schemaVersion && summary.header.entries >= 6)
        var info = stat()
        stat(file, &info)
        #expect(info.st_mode & 0o777 == 0o600, "the file holds secrets")
        let target = DataDirectory(flow.fixture.path + "-restored")
        defer { try? FileManager.default.removeItem(atPath: target.path) }
        let restored = try Backup.restore(from: file, into: target)
        #expect(restored.header == summary.header)
        let store = try Store(directory: target.storeDirectory, options: try target.loadConfiguration().storeOptions)
        #expect(try store.read { try $0.device(keyID: flow.device.keyID) } == (try flow.storedDevice()))
        #expect(try store.read { try $0.dueReceipts(at: due, limit: 5) }.map(\.keyID) == [flow.device.keyID])
        #expect(try store.read { try $0.appleTeam("ABCDE12345") }?.answers == [200: 2])
        let restoredFlags = try store.read { txn in
            (try txn.featureFlagApp(appID: Fixture.appID), try txn.featureFlags(appID: Fixture.appID),
             try txn.featureFlagOverrides(appID: Fixture.appID), try txn.releaseNotes(appID: Fixture.appID),
             try txn.seenNotes(lineage: lineage), try txn.deviceVersions(lineage: lineage))
        }
        #expect(restoredFlags.0 == flags && restoredFlags.1 == [flag] && restoredFlags.2 == [override])
        #expect(restoredFlags.3 == [note] && restoredFlags.4 == [noteID: now] && restoredFlags.5 == versions)
        #expect(try target.challengeSecret() == (try flow.fixture.data.challengeSecret()))
        let restoredKey = try #require(try AppleKeyStore(target).key(team: "ABCDE12345"))
        let appleSPKI = try SigningKey(pemEncoded: appleKey).subjectPublicKeyInfo
        #expect(restoredKey.keyID == "KEY1234567" && restoredKey.key.subjectPublicKeyInfo == appleSPKI)
        #expect(stat(AppleKeyStore(target).directory + "/ABCDE12345.p8", &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try FileIO.read(target.jwksFile) == (try FileIO.read(flow.fixture.data.jwksFile)))
    }

    @Test(.enabled(if: !Fixture.onPostgres, "LMDB only"))
    func restoringOverAStoreKeepsItsSyncsAndForgetsNoUsedChallenge() throws {
        var template = Array("/tmp/attest-restore-test-XXXXXX".utf8CString)
        let root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = DataDirectory(root + "/data")
        let now = Timestamp(iso8601: "2026-06-01T12:00:00Z")!
        try data.initialise(configuration: Configuration(), now: now)
        let options = try data.loadConfiguration().storeOptions
        let file = root + "/backup.aebk"
        do {
            let store = try Store(directory: data.storeDirectory, options: options)
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "acme", createdAt: now)) }
            _ = try Backup.take(data: data, store: store, to: file, now: now)
            // Commits after the backup: the live file's transaction ids run ahead of the copy's.
            for i in 0..<50 {
                try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "org\(i)", createdAt: now)) }
            }
        }
        _ = try Backup.restore(from: file, into: data)
        let store = try Store(directory: data.storeDirectory, options: options)
        #expect(try store.read { try $0.org(named: "org0") } == nil && store.read { try $0.org(named: "acme") } != nil)
        let before = store.durabilitySyncs
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "after", createdAt: now)) }
        #expect(store.durabilitySyncs == before + 1, "a write after the restore is synced before it returns")
        #expect(store.ephemeralResetAt > 0,
                "the ephemeral store is recreated, with a cutoff for the challenges issued before")
    }

    @Test(.enabled(if: !Fixture.onPostgres, "LMDB only"))
    func aDamagedOrTruncatedBackupIsRefusedBeforeAnythingIsWritten() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let file = flow.fixture.path + "-" + UUID().uuidString + ".aebk"
        defer { try? FileManager.default.removeItem(atPath: file) }
        _ = try Backup.take(data: flow.fixture.data, store: flow.context.store, to: file, now: flow.fixture.clock.now())
        var bytes = try #require(try FileIO.read(file))
        bytes[bytes.count / 2] ^= 0x01
        try FileIO.writeAtomically(file, bytes, mode: 0o600)
        let target = DataDirectory(flow.fixture.path + "-damaged")
        defer { try? FileManager.default.removeItem(atPath: target.path) }
        #expect(throws: OperationsError.self) { try Backup.restore(from: file, into: target) }
        #expect(!FileIO.exists(target.path), "nothing written")
        try FileIO.writeAtomically(file, Array(bytes.prefix(bytes.count - 100)), mode: 0o600)
        #expect(throws: OperationsError.self) { try Backup.verify(file) }
        try FileIO.writeAtomically(file, Array("not a backup at all, but long enough to be read as one".utf8),
                                   mode: 0o600)
        #expect(throws: OperationsError.self) { try Backup.verify(file) }
        // The first entry's length with its top bit set: a damaged file, not a trap.
        // Layout: "AEBACKUP" format schema created(8) entries(4), then name length(2) name mode(4) length(8).
        var lengthFlipped = bytes  // the copy damaged in its middle: the first entry's header is intact
        let nameLength = Int(lengthFlipped[22]) << 8 | Int(lengthFlipped[23])
        lengthFlipped[24 + nameLength + 4] |= 0x80
        try FileIO.writeAtomically(file, lengthFlipped, mode: 0o600)
        #expect(throws: OperationsError.self) { try Backup.verify(file) }
    }
}
