import AttestCore
import AttestStore
import Testing

@Suite struct RecordCodecTests {
    let now = Timestamp(seconds: 1_790_000_000)

    func device() -> DeviceRecord {
        DeviceRecord(keyID: [UInt8](repeating: 7, count: 32), deviceID: "d-1", appID: "TEAM.com.example",
                     publicKey: [4] + [UInt8](repeating: 9, count: 64),
                     counter: 41, environment: .development, status: .invalidated, operatorFlags: [.jailbreak],
                     attestationCount: 3, failedAssertions: 2, createdAt: now, lastAttestedAt: now + 5,
                     lastSeenAt: now + 9, fingerprint: "fp", subjectID: "household-1",
                     metadata: .init(deviceModel: "iPhone15,2", osVersion: "18.0", appVersion: "2.1.0",
                                     appBuildNumber: "42", platform: "iOS"),
                     validationCategory: 1, bundleVersion: "1.0")
    }

    @Test func orgRoundTrips() throws {
        let org = OrgRecord(name: "Acme ✓", tier: .business, madLimit: 12, graceDays: 3, upgradeURL: "https://x/up",
                            ratePerMinute: 99, createdAt: now)
        #expect(try OrgRecord(encoded: org.encoded()) == org)
    }

    @Test func stringsReadBackASCIIAndNotAndInvalidUTF8IsCorrupt() throws {
        var writer = BinaryWriter(version: 1)
        for text in ["iPhone15,2", "", "Café ✓ 🍏"] { writer.string(text) }
        writer.data([0xC3, 0x28])  // a lead byte followed by a non-continuation byte
        writer.data([0x41, 0x80])  // ASCII then a stray continuation byte
        var reader = try BinaryReader(writer.bytes, record: "test")
        #expect(try reader.string() == "iPhone15,2")
        #expect(try reader.string() == "")
        #expect(try reader.string() == "Café ✓ 🍏")
        #expect(throws: StoreError.self) { try reader.string() }
        #expect(throws: StoreError.self) { try reader.string() }
    }

    @Test func orgDefaultsComeFromTheTier() {
        let org = OrgRecord(name: "a", tier: .pro, createdAt: now)
        #expect(org.madLimit == Tier.pro.defaultMADLimit && org.ratePerMinute == Tier.pro.defaultRatePerMinute)
    }

    @Test func appRoundTrips() throws {
        for policy in EnvironmentPolicy.allCases {
            let app = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", policy: policy,
                                enabled: false, tokenLifetimeSeconds: 600, customClaimsJSON: #"[{"static":{"a":1}}]"#,
                                minAppVersion: "2.0", minOSVersion: "17.0", createdAt: now)
            #expect(try AppRecord(encoded: app.encoded()) == app, "policy \(policy)")
            #expect(app.appID == "ABCDE12345.com.example.app")
        }
    }

    @Test func theAppsAppleRiskMetricPolicyRoundTripsAndVersion1ReadsAsOff() throws {
        var app = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", createdAt: now)
        #expect(app.appleRiskMetricThreshold == 0
                    && app.appleRiskMetricPoints == AppRecord.defaultAppleRiskMetricPoints)
        app.appleRiskMetricThreshold = 4
        app.appleRiskMetricPoints = 60
        #expect(try AppRecord(encoded: app.encoded()) == app)
        var v1 = app.encoded().dropLast(5)
        v1[v1.startIndex] = 1
        let old = try AppRecord(encoded: Array(v1))
        #expect(old.appleRiskMetricThreshold == 0 && old.appleRiskMetricPoints == AppRecord.defaultAppleRiskMetricPoints
                    && old.createdAt == now, "an app stored before the signal has it off")
        var bad = app.encoded()
        bad[bad.count - 1] = 101
        #expect(throws: StoreError(.corrupt, "")) { try AppRecord(encoded: bad) }
    }

    @Test func deviceRoundTripsWithTheKeyFromOutside() throws {
        let d = device()
        var decoded = try DeviceRecord(encoded: d.encoded())
        #expect(decoded.keyID.isEmpty, "the keyID is the key, not part of the value")
        decoded.keyID = d.keyID
        #expect(decoded == d)
        var absent = d
        absent.validationCategory = nil
        var back = try DeviceRecord(encoded: absent.encoded())
        back.keyID = d.keyID
        #expect(back.validationCategory == nil)
    }

    @Test func theDeviceAnchorRoundTripsAndVersion1ReadsAsApple() throws {
        var d = device()
        d.anchor = .testRoot
        #expect(try DeviceRecord(encoded: d.encoded()).anchor == .testRoot)
        // A v1 record is the v4 layout without the trailing anchor, score, metric and receipt bytes (1 + 1 + 12 + 1).
        var v1 = device().encoded().dropLast(15)
        v1[v1.startIndex] = 1
        let old = try DeviceRecord(encoded: Array(v1))
        #expect(old.anchor == .apple && old.bundleVersion == "1.0", "v1 devices were verified by Apple's root")
        var bad = d.encoded()
        bad[bad.count - 15] = 7
        #expect(throws: StoreError(.corrupt, "")) { try DeviceRecord(encoded: bad) }
    }

    @Test func theAppleRiskMetricAndReceiptCheckRoundTripAndVersion3ReadsAsNotKnownYet() throws {
        var d = device()
        d.appleRiskMetric = 7
        d.appleRiskMetricAt = now + 60
        d.receiptCheck = .invalid
        var back = try DeviceRecord(encoded: d.encoded())
        back.keyID = d.keyID
        #expect(back == d)
        d.appleRiskMetric = 0
        #expect(try DeviceRecord(encoded: d.encoded()).appleRiskMetric == 0, "0 is a metric, not its absence")
        var v3 = d.encoded().dropLast(13)
        v3[v3.startIndex] = 3
        let old = try DeviceRecord(encoded: Array(v3))
        #expect(old.appleRiskMetric == nil && old.appleRiskMetricAt == nil && old.receiptCheck == .unchecked
                    && old.bundleVersion == "1.0")
        var bad = d.encoded()
        bad[bad.count - 1] = 3
        #expect(throws: StoreError(.corrupt, "")) { try DeviceRecord(encoded: bad) }
        #expect(throws: StoreError(.corrupt, "")) { try DeviceRecord(encoded: Array(v3) + [0]) }
    }

    @Test func receiptRecordsRoundTripAndVersion1ReadsAsUnchecked() throws {
        var r = ReceiptRecord(receipt: [0x30, 0x80, 1, 2, 3], check: .invalid, reason: "receipt is about another key",
                              anchor: .testRoot, kind: "RECEIPT", appID: "TEAM.com.example", environment: "sandbox",
                              createdAt: now, notBefore: now + 86_400, expiresAt: now + 90 * 86_400, riskMetric: 3,
                              credentialCertSHA256: [UInt8](repeating: 0xAB, count: 32), nextRedeemAt: now + 60)
        r.failures = 2
        r.lastAttemptAt = now + 5
        r.lastStatus = 429
        r.lastOutcome = "too many requests"
        r.redeemedAt = now + 1
        for i in 0..<20 { r.record(metric: UInt32(i), at: now + Int64(i)) }
        #expect(r.history.count == ReceiptRecord.maximumHistory && r.history.first?.metric == 4,
                "the oldest samples go first")
        #expect(try ReceiptRecord(encoded: r.encoded()) == r)
        let bare = ReceiptRecord(receipt: [9, 9])
        #expect(try ReceiptRecord(encoded: bare.encoded()) == bare, "nothing known is read back as nothing known")

        let v1 = try ReceiptRecord(encoded: [1, 0x30, 0x80, 0xAA])
        #expect(v1.receipt == [0x30, 0x80, 0xAA] && v1.check == .unchecked && v1.kind.isEmpty
                    && v1.nextRedeemAt == nil && v1.riskMetric == nil,
                "a receipt stored before verification: its bytes, unchecked, nothing parsed, not scheduled")
        var bad = r.encoded()
        bad[1 + 4 + r.receipt.count] = 3  // the check byte
        #expect(throws: StoreError(.corrupt, "")) { try ReceiptRecord(encoded: bad) }
        #expect(throws: StoreError(.unknownVersion, "")) { try ReceiptRecord(encoded: [3, 0]) }
    }

    @Test func appleTeamsRoundTripWithTheirAnswersByStatus() throws {
        let team = AppleTeamRecord(teamID: "", stoppedAt: now, stopReason: "401: key refused",
                                   answers: [200: 12, 0: 1, 429: 3], lastAnswerAt: now + 3)
        #expect(try AppleTeamRecord(encoded: team.encoded()) == team)
        #expect(try AppleTeamRecord(encoded: AppleTeamRecord(teamID: "").encoded()) == AppleTeamRecord(teamID: ""))
        var twice = BinaryWriter(version: 1)
        twice.i64(0)
        twice.string("")
        twice.u16(2)
        for _ in 0..<2 { twice.u16(200); twice.u64(1) }
        twice.i64(0)
        #expect(throws: StoreError(.corrupt, "")) { try AppleTeamRecord(encoded: twice.bytes) }
    }

    @Test func orgLinkPoliciesRoundTripAndVersion1ReadsAsAssertedWithoutASecret() throws {
        for policy in SubjectLinkPolicy.allCases {
            let org = OrgRecord(name: "acme", tier: .pro, createdAt: now, subjectLinks: policy,
                                subjectSecret: "asl_s3cret")
            #expect(try OrgRecord(encoded: org.encoded()) == org, "\(policy)")
        }
        #expect(OrgRecord(name: "new", createdAt: now).subjectLinks == .signed, "a new organization is signed")
        // Layout v1, field by field as builds before link policies wrote it.
        var v1 = BinaryWriter(version: 1)
        v1.string("old-org")
        v1.u8(1)  // pro
        v1.u32(5_000)
        v1.u16(7)
        v1.string("https://x/up")
        v1.u32(600)
        v1.i64(now.seconds)
        let old = try OrgRecord(encoded: v1.bytes)
        #expect(old.name == "old-org" && old.tier == .pro && old.madLimit == 5_000 && old.ratePerMinute == 600
                    && old.createdAt == now)
        #expect(old.subjectLinks == .asserted && old.subjectSecret.isEmpty,
                "organizations from before link policies keep asserted")
        var bad = OrgRecord(name: "a", createdAt: now, subjectSecret: "").encoded()
        bad[bad.count - 6] = 9  // the policy byte, before the empty secret's 4-byte length and the feedback switch
        #expect(throws: StoreError(.corrupt, "")) { try OrgRecord(encoded: bad) }
    }

    @Test func orgVersion2ReadsWithFeedbackOnAndTheSwitchRoundTrips() throws {
        let off = OrgRecord(name: "quiet", createdAt: now, subjectSecret: "asl_x", feedbackEnabled: false)
        #expect(try OrgRecord(encoded: off.encoded()) == off)
        // A v2 record is the v3 layout without the trailing feedback byte.
        var v2 = off.encoded().dropLast()
        v2[v2.startIndex] = 2
        let old = try OrgRecord(encoded: Array(v2))
        #expect(old.feedbackEnabled && old.subjectSecret == "asl_x", "organizations from before the switch have feedback on")
        var bad = off.encoded()
        bad[bad.count - 1] = 2
        #expect(throws: StoreError(.corrupt, "")) { try OrgRecord(encoded: bad) }
    }

    @Test func apiKeyScopesRoundTripAndVersion1ReadsAsAll() throws {
        let key = APIKeyRecord(id: "", org: "acme", name: "CI", hash: [UInt8](repeating: 7, count: 32), createdAt: now,
                               scope: .heartbeat)
        #expect(try APIKeyRecord(encoded: key.encoded()) == key)
        // A v1 record is the v2 layout without the trailing scope byte.
        var v1 = key.encoded().dropLast()
        v1[v1.startIndex] = 1
        #expect(try APIKeyRecord(encoded: Array(v1)).scope == .all, "keys made before scopes could do everything")
        var bad = key.encoded()
        bad[bad.count - 1] = 9
        #expect(throws: StoreError(.corrupt, "")) { try APIKeyRecord(encoded: bad) }
    }

    @Test func unknownVersionsAreRejected() throws {
        var bytes = OrgRecord(name: "a", createdAt: now).encoded()
        bytes[0] = OrgRecord.currentVersion + 1
        #expect(throws: StoreError(.unknownVersion, "")) { try OrgRecord(encoded: bytes) }
        var deviceBytes = device().encoded()
        deviceBytes[0] = 0
        #expect(throws: StoreError(.unknownVersion, "")) { try DeviceRecord(encoded: deviceBytes) }
    }

    @Test func truncatedAndExtendedRecordsAreCorrupt() throws {
        let bytes = AppRecord(teamID: "T", bundleID: "b", org: "o", createdAt: now).encoded()
        for cut in [0, 1, bytes.count / 2, bytes.count - 1] {
            #expect(throws: StoreError.self, "cut at \(cut)") { try AppRecord(encoded: Array(bytes.prefix(cut))) }
        }
        #expect(throws: StoreError(.corrupt, "")) { try AppRecord(encoded: bytes + [0]) }
    }

    @Test func outOfRangeEnumsAreCorrupt() throws {
        var bytes = OrgRecord(name: "", createdAt: now).encoded()
        // version, name length (4 bytes, 0), then the tier byte
        bytes[5] = 9
        #expect(throws: StoreError(.corrupt, "")) { try OrgRecord(encoded: bytes) }
    }
}
