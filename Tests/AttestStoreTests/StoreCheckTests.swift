import AttestCore
import AttestStore
import Testing

/// `Store.check()`: a consistent store passes; each kind of damage is named.
@Suite struct StoreCheckTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    func filledStore() throws -> (Store, DeviceRecord) {
        let store = try Store(directory: dir.path + "/store",
                              options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16))
        let device = DeviceRecord(keyID: [UInt8](repeating: 7, count: 32), deviceID: "dev-1",
                                  appID: "ABCDE12345.com.example.app",
                                  publicKey: [4] + [UInt8](repeating: 1, count: 64), environment: .production,
                                  createdAt: now)
        try store.write { txn in
            try txn.put(OrgRecord(name: "acme", createdAt: now))
            try txn.put(AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", createdAt: now))
            try txn.put(device)
            try txn.put(ReceiptRecord(receipt: [0x30, 0x00]), keyID: device.keyID)
            _ = try txn.noteFingerprint("fp", appID: device.appID, keyID: device.keyID, at: now)
            _ = try txn.consumeChallenge(id: [UInt8](repeating: 1, count: 16), expiry: now.seconds + 300)
            _ = try txn.hitRateWindow("ip:192.0.2.1", windowEnd: now.seconds + 60)
        }
        return (store, device)
    }

    @Test func consistentStorePasses() throws {
        let (store, _) = try filledStore()
        let report = try store.check()
        #expect(report.isConsistent,
                "a store written through the API is consistent: \(report.databases.flatMap(\.problems))")
        #expect(report.databases.map(\.database) == Database.allCases, "every database is reported, in order")
        #expect(report.databases.first { $0.database == .devices }?.entries == 1, "the device is counted")
    }

    @Test func missingIndexEntryIsNamed() throws {
        let (store, device) = try filledStore()
        try store.write { txn in _ = try txn.delete(.deviceIDs, Array(device.deviceID.utf8)) }
        let report = try store.check()
        #expect(!report.isConsistent, "a device without its device_ids entry is inconsistent")
        #expect(report.databases.first { $0.database == .devices }?.problems.first?.contains("device_ids") == true,
                "the device names the index")
        #expect(report.crossProblems.contains { $0.contains("devices has 1") }, "the counts differ")
    }

    @Test func subjectLinksAndDueDeliveriesAreCheckedBothWays() throws {
        let (store, device) = try filledStore()
        let event = OutboxEvent(id: "evt_1", event: "device.new", org: "acme", createdAt: now, dataJSON: "{}")
        try store.write { txn in
            var linked = device
            try txn.link(&linked, to: "family-1", org: "acme", now: now)
            try txn.put(linked)
            try txn.put(WebhookEndpointRecord(id: "wh_1", org: "acme", url: "https://example.com/", events: [],
                                              description: "", secret: "whsec_x", createdAt: now))
            try txn.put(DeliveryRecord(endpointID: "wh_1", event: event, firstAttemptAt: now))
        }
        #expect(try store.check().isConsistent, "written through the API: consistent")
        try store.write { txn in
            // Damage: the pending delivery loses its due entry; a due entry points at nothing;
            // a subject link names a device that is not linked; the linked device loses its link entry.
            let pending = try #require(try txn.deliveries(endpoint: "wh_1").first)
            _ = try txn.delete(.deliveryDue, BigEndian.bytes(now.seconds) + pending.key)
            _ = try txn.put(.deliveryDue,
                            BigEndian.bytes(now.seconds) + Array("wh_1".utf8) + [0] + BigEndian.bytes(UInt64(99)), [])
            var scan = [[UInt8]]()
            try txn.scan(.subjectDevices) { key, _ in scan.append(key); return true }
            for key in scan { _ = try txn.delete(.subjectDevices, key) }
            _ = try txn.put(.subjectDevices, [UInt8](repeating: 5, count: 16) + device.keyID, [1])
        }
        let problems = try store.check().databases.reduce(into: [Database: [String]]()) {
            $0[$1.database] = $1.problems
        }
        #expect(problems[.deliveries]?.first?.contains("would never be sent") == true, "\(problems[.deliveries] ?? [])")
        #expect(problems[.deliveryDue] == ["a due entry for no delivery"])
        #expect(problems[.subjectDevices]?.first?.contains("does not have") == true,
                "\(problems[.subjectDevices] ?? [])")
        #expect(problems[.devices]?.contains { $0.contains("subject_devices") } == true, "\(problems[.devices] ?? [])")
    }

    @Test func dueReceiptsAreCheckedBothWays() throws {
        let (store, device) = try filledStore()
        try store.write { txn in
            let old = try #require(try txn.receiptRecord(keyID: device.keyID))
            var scheduled = old
            scheduled.nextRedeemAt = now + 60
            try txn.put(scheduled, keyID: device.keyID, previousDue: old.nextRedeemAt)
            try txn.put(AppleTeamRecord(teamID: "ABCDE12345", answers: [200: 1]))
        }
        #expect(try store.check().isConsistent, "written through the API: consistent")
        try store.write { txn in
            // Damage: the scheduled receipt loses its due entry; a due entry names no receipt;
            // a due entry names a receipt due at another time; a receipt of no device.
            _ = try txn.delete(.receiptDue, BigEndian.bytes((now + 60).seconds) + device.keyID)
            _ = try txn.put(.receiptDue, BigEndian.bytes(now.seconds) + [UInt8](repeating: 3, count: 32), [])
            _ = try txn.put(.receiptDue, BigEndian.bytes(now.seconds) + device.keyID, [])
            try txn.put(ReceiptRecord(receipt: [0x30]), keyID: [UInt8](repeating: 4, count: 32))
            _ = try txn.put(.appleTeams, Array("BROKEN".utf8), [1, 0])
        }
        let problems = try store.check().databases.reduce(into: [Database: [String]]()) {
            $0[$1.database] = $1.problems
        }
        #expect(problems[.receipts]?.contains { $0.contains("would never be redeemed") } == true,
                "\(problems[.receipts] ?? [])")
        #expect(problems[.receipts]?.contains("receipt without a device") == true, "\(problems[.receipts] ?? [])")
        #expect(problems[.receiptDue]?.sorted() == ["a due entry for a receipt due at another time or not scheduled",
                                                    "a due entry for no receipt"])
        #expect(problems[.appleTeams]?.first?.contains("does not decode") == true, "\(problems[.appleTeams] ?? [])")
    }

    @Test func aLinkedDeviceWhoseSubjectHasNoRecordIsNamed() throws {
        let (store, device) = try filledStore()
        try store.write { txn in
            var linked = device
            try txn.link(&linked, to: "family-1", org: "acme", now: now)
            try txn.put(linked)
        }
        #expect(try store.check().isConsistent)
        try store.write { txn in _ = try txn.delete(.subjects, Array("acme".utf8) + [0] + Array("family-1".utf8)) }
        let problems = try store.check().databases.first { $0.database == .devices }?.problems ?? []
        #expect(problems == ["device dev-1 is linked to subject family-1, which has no record"])
    }

    @Test func undecodableRecordAndOrphansAreNamed() throws {
        let (store, device) = try filledStore()
        try store.write { txn in
            _ = try txn.put(.orgs, Array("broken".utf8), [99, 1, 2])
            _ = try txn.put(.receipts, [UInt8](repeating: 9, count: 32), [1, 0x30])
            _ = try txn.delete(.apps, Array(device.appID.utf8))
        }
        let problems = try store.check().databases.reduce(into: [Database: [String]]()) {
            $0[$1.database] = $1.problems
        }
        #expect(problems[.orgs]?.first?.contains("does not decode") == true,
                "an unknown record version does not decode")
        #expect(problems[.receipts] == ["receipt without a device"], "an orphan receipt")
        #expect(problems[.devices]?.contains { $0.contains("missing app") } == true, "a device of a deleted app")
    }
}
