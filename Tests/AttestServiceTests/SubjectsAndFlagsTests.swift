import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// Subjects and entitlements (issue #9 item 2) and operator flags (item 3), in-process.
@Suite struct SubjectsAndFlagsTests {
    func grant(_ flow: DeviceFlow, _ subject: String, _ entitlement: String, until: Timestamp? = nil,
               org: String = "acme") throws {
        _ = try SubjectGrants.grant(org: org, subjectID: subject, entitlement: entitlement, until: until,
                                    store: flow.context.store, now: flow.fixture.clock.now())
    }

    func linked(_ flow: DeviceFlow, _ subject: String) throws -> [[UInt8]] {
        try flow.context.store.read { try $0.subjectDevices(org: "acme", subjectID: subject) }
    }

    // Subjects.

    @Test func aRefreshRefusedByItsLineagesBlockChangesNothing() throws {
        // A key beyond the lineage's mirrored history carries no flag of its own: the block is
        // found in the final write, after the month's count and the subject link were written.
        let flow = try DeviceFlow()
        try flow.enroll()
        let device = try #require(try flow.storedDevice())
        try flow.context.store.write { txn in
            var lineage = try txn.lineage(of: device)
            lineage.flags.insert(.blocked)
            try txn.put(lineage, .of(device))
        }
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-02T12:00:00Z")!)  // a new month: refresh would count it
        let (status, _) = try flow.refresh([("subjectId", "family-9")])
        #expect(status == 403)
        let (stored, counted) = try flow.context.store.read { txn in
            (try txn.device(keyID: device.keyID), try txn.usageMonthReport(org: "acme", month: "2026-07"))
        }
        #expect(stored?.subjectID == device.subjectID && stored?.counter == device.counter, "the device is as it was")
        #expect((counted?.activeDevices ?? 0) == 0, "July counted nobody")
    }

    @Test func aSubjectIsLinkedAtValidateKeptWhenOmittedMovedAndUnlinked() throws {
        let flow = try DeviceFlow()
        try grant(flow, "house-1", "premium")
        let (_, enrolled) = try flow.attest(flow.device, [("subjectId", "house-1")])
        #expect(try DeviceFlow.claims(enrolled)["subscription"]
                    == .object([("subject_id", "house-1"), ("entitlements", ["premium"]), ("expires_at", nil)]))
        #expect(try linked(flow, "house-1") == [flow.device.keyID])
        let (_, kept) = try flow.refresh()
        #expect(try DeviceFlow.claims(kept)["subscription"]?["subject_id"]?.stringValue == "house-1",
                "omitted keeps the link")
        let (_, moved) = try flow.refresh([("subjectId", "house-2")])
        #expect(try DeviceFlow.claims(moved)["subscription"]
                    == .object([("subject_id", "house-2"), ("entitlements", []), ("expires_at", nil)]))
        #expect(try linked(flow, "house-1").isEmpty && linked(flow, "house-2") == [flow.device.keyID],
                "the index moved with it")
        let (status, unlinked) = try flow.refresh([("subjectId", "")])
        #expect(try status == 200 && DeviceFlow.claims(unlinked)["subscription"] == nil,
                "blank unlinks: no subscription claim")
        #expect(try flow.storedDevice()?.subjectID == "" && linked(flow, "house-2").isEmpty)
    }

    @Test func aSubjectNothingHoldsIsDeletedAndAGrantedOneKept() throws {
        // Issue 37 B2: a device sending a fresh subjectId at every refresh (policy asserted)
        // left a record per value behind; now a subject goes with its last device unless the
        // operator granted it something.
        let flow = try DeviceFlow()
        try grant(flow, "paid", "premium")
        let other = try SoftwareDevice.generate()
        #expect(try flow.attest(other, [("subjectId", "shared")]).0 == 200)
        #expect(try flow.attest(flow.device, [("subjectId", "paid")]).0 == 200)
        #expect(try flow.refresh([("subjectId", "shared")]).0 == 200)
        for i in 1...50 {
            flow.fixture.clock.advance(61)  // past the per-IP refresh window
            #expect(try flow.refresh([("subjectId", .string("s\(i)"))]).0 == 200)
        }
        let subjects = { try flow.context.store.read { try $0.subjects(org: "acme") }.map(\.subjectID) }
        #expect(try subjects() == ["paid", "s50", "shared"],
                "paid holds a grant, shared another device; s1…s49 are gone")
        #expect(try flow.refresh([("subjectId", "")]).0 == 200)
        #expect(try subjects() == ["paid", "shared"], "unlinking deletes s50")
        _ = try SubjectGrants.revoke(org: "acme", subjectID: "paid", entitlement: "premium", store: flow.context.store)
        #expect(try subjects() == ["shared"], "its last entitlement revoked, a subject no device holds goes too")
        let report = try flow.context.store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems))")
    }

    @Test func aBlankSubjectAtValidateIsNoLink() throws {
        let flow = try DeviceFlow()
        let (_, body) = try flow.attest(flow.device, [("subjectId", "  ")])
        #expect(try DeviceFlow.claims(body)["subscription"] == nil)
        #expect(try flow.context.store.read { try $0.subjects(org: "acme") }.isEmpty)
    }

    @Test func grantsShowUpAtTheNextRefreshAndExpireByThemselves() throws {
        let flow = try DeviceFlow(tier: .pro)
        try flow.setClaims([try rule("tier", "free"), try rule("tier", "premium", when: "subscribed eq true")])
        let (_, body) = try flow.attest(flow.device, [("subjectId", "house-1")])
        #expect(body["customClaims"]?["tier"]?.stringValue == "free")
        let now = flow.fixture.clock.now()
        try grant(flow, "house-1", "premium", until: now + 3_600)
        try grant(flow, "house-1", "family", until: now + 7_200)
        let (_, granted) = try flow.refresh()
        let claims = try DeviceFlow.claims(granted)
        #expect(claims["subscription"]?["entitlements"] == ["premium", "family"])
        #expect(claims["subscription"]?["expires_at"]?.stringValue == (now + 3_600).iso8601, "the earliest end")
        #expect(claims["custom_claims"]?["tier"]?.stringValue == "premium", "subscribed is a claim property")
        flow.fixture.clock.advance(3_600)
        let (_, later) = try flow.refresh()
        #expect(try DeviceFlow.claims(later)["subscription"]?["entitlements"] == ["family"], "premium ended by itself")
        flow.fixture.clock.advance(3_600)
        let (_, lapsed) = try flow.refresh()
        #expect(try DeviceFlow.claims(lapsed)["subscription"]?["entitlements"] == [])
        #expect(try DeviceFlow.claims(lapsed)["custom_claims"]?["tier"]?.stringValue == "free")
        #expect(try flow.context.store.read { try $0.subject(org: "acme", subjectID: "house-1") }?.entitlements.count
                    == 2, "kept, just not in force")
    }

    @Test func revokeRemovesAnEntitlementAndSubjectsAreScopedToTheOrganization() throws {
        let flow = try DeviceFlow()
        try grant(flow, "house-1", "premium", org: "other-org")
        let (_, body) = try flow.attest(flow.device, [("subjectId", "house-1")])
        #expect(try DeviceFlow.claims(body)["subscription"]?["entitlements"] == [],
                "another organization's grant is not this one's")
        try grant(flow, "house-1", "premium")
        _ = try SubjectGrants.revoke(org: "acme", subjectID: "house-1", entitlement: "premium",
                                     store: flow.context.store)
        #expect(try DeviceFlow.claims(try flow.refresh().1)["subscription"]?["entitlements"] == [])
        #expect(throws: ServiceError.self) {
            try SubjectGrants.revoke(org: "acme", subjectID: "house-1", entitlement: "premium",
                                     store: flow.context.store)
        }
        #expect(throws: ServiceError.self) { try grant(flow, "house-1", "has space") }
        #expect(throws: ServiceError.self) { try grant(flow, "house-1", "x", until: flow.fixture.clock.now()) }
    }

    // Operator flags.

    @Test func aBlockedDeviceRefreshesTo403AndItsNewKeyIsNotValid() throws {
        let flow = try DeviceFlow()
        #expect(try flow.attest(flow.device, [("deviceFingerprint", "phone-1")]).0 == 200)
        let change = try flow.flag(.block, reason: "chargeback fraud")
        #expect(change.flags == [.blocked] && change.keys == 1)
        let (status, body) = try flow.refresh()
        #expect(status == 403 && body["code"]?.stringValue == "forbidden")
        // The device regenerates its key: same fingerprint, still blocked.
        flow.device = try SoftwareDevice.generate()
        let (s2, again) = try flow.attest(flow.device, [("deviceFingerprint", "phone-1")])
        #expect(s2 == 200 && again["isValid"]?.boolValue == false)
        #expect(again["deviceIntelligence"]?["riskCategory"]?.stringValue == "blocked"
                    && again["deviceIntelligence"]?["riskScore"]?.intValue == 100)
        #expect(try DeviceFlow.claims(again)["risk_category"]?.stringValue == "blocked")
        #expect(try flow.refresh().0 == 403, "the new key is refused too")
        // Another fingerprint is another device.
        let (_, other) = try flow.attest(try SoftwareDevice.generate(), [("deviceFingerprint", "phone-2")])
        #expect(other["isValid"]?.boolValue == true)
    }

    @Test func clearingRestoresEveryKeyAndEveryChangeIsLogged() throws {
        let flow = try DeviceFlow()
        let first = flow.device
        #expect(try flow.attest(first, [("deviceFingerprint", "phone-1")]).0 == 200)
        _ = try flow.flag(.block, reason: "suspected emulator")
        flow.device = try SoftwareDevice.generate()
        #expect(try flow.attest(flow.device, [("deviceFingerprint", "phone-1")]).1["isValid"]?.boolValue == false)
        flow.fixture.clock.advance(60)
        let cleared = try flow.flag(.clear, first.keyID, reason: "false positive")
        #expect(cleared.keys == 2 && cleared.previous == [.blocked] && cleared.flags.isEmpty,
                "both keys of the fingerprint")
        #expect(try flow.refresh().0 == 200)
        let device = try #require(try flow.storedDevice())
        let log = try flow.context.store.read { try $0.flagChanges(.of(device)) }
        #expect(log.map(\.reason) == ["suspected emulator", "false positive"] && log.map(\.flags) == [[.blocked], []])
        #expect(log[1].at == log[0].at + 60 && log[1].keyID == first.keyID)
        let blocked = try flow.outbox().filter { $0.event == "device_blocked" }
        #expect(try blocked.count == 1
                    && JSONParser.parse(blocked[0].dataJSON)["reason"]?.stringValue == "suspected emulator")
    }

    @Test func aJailbrokenFlagWithoutFingerprintAppliesToThatKey() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        _ = try flow.flag(.jailbroken)
        let (status, body) = try flow.refresh()
        let claims = try DeviceFlow.claims(body)
        #expect(status == 200 && claims["jailbreak_detected"]?.boolValue == true
                    && claims["risk_score"]?.intValue == 80)
        #expect(claims["device_integrity"]?.stringValue == "flagged")
        #expect(try flow.storedDevice()?.operatorFlags == [.jailbreak])
        #expect(throws: ServiceError.self) { _ = try flow.flag(.block, [UInt8](repeating: 0, count: 32)) }
    }
}
