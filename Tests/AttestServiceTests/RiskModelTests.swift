import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

/// The risk model (docs/tokens.md, "Risk score"): one test per signal, the category boundaries, the
/// free tier's null score, and the events a category change queues.
@Suite struct RiskModelTests {
    let app = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme",
                        createdAt: Timestamp(seconds: 0))

    func score(_ json: String) throws -> RiskAssessment {
        RiskAssessment(try DeviceProfile(profileJSON: json), app: app)
    }

    func intelligence(_ body: JSONValue) -> (Int64?, String?) {
        (body["deviceIntelligence"]?["riskScore"]?.intValue, body["deviceIntelligence"]?["riskCategory"]?.stringValue)
    }

    @Test func categoryBoundariesAre20And75() throws {
        #expect([0, 20, 21, 75, 76, 100].map(RiskAssessment.category)
                    == ["trusted", "trusted", "suspicious", "suspicious", "blocked", "blocked"])
        // The same edges reached by signals: 10 + 2 × 5 = 20; one more forged assertion: 25.
        #expect(try score(#"{"environment":"development","forgedAssertions":2}"#).category == "trusted")
        #expect(try score(#"{"environment":"development","forgedAssertions":3}"#).category == "suspicious")
        // 45 churn + 20 burst + 10 development = 75; plus one forged assertion: 80.
        let edge = try score(#"{"environment":"development","attestationCount":4,"recentAttestations":3}"#)
        #expect(edge.score == 75 && edge.category == "suspicious")
        #expect(try score(#"{"environment":"development","attestationCount":4,"recentAttestations":3,"#
                          + #""forgedAssertions":1}"#).category == "blocked")
        // A claim sees the category the score falls in.
        for (given, category) in [(20, "trusted"), (21, "suspicious"), (75, "suspicious"), (76, "blocked")] {
            let a = DeviceAssessment(profile: try DeviceProfile(profileJSON: #"{"riskScore":\#(given)}"#), app: app,
                                     rules: [try rule("c", .string(category), when: "riskCategory eq \(category)")])
            #expect(a.claims.count == 1, "riskScore \(given) is \(category)")
        }
    }

    @Test func eachSignalAddsItsDocumentedPoints() throws {
        var minimums = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", minAppVersion: "3.0",
                                 minOSVersion: "18.0", createdAt: Timestamp(seconds: 0))
        minimums.appleRiskMetricThreshold = 5
        let cases: [(String, String, Int)] = [
            (#"{"environment":"development"}"#, "development_key", 10),
            (#"{"attestationCount":2,"recentAttestations":0}"#, "key_churn", 15),
            (#"{"attestationCount":9,"recentAttestations":0}"#, "key_churn", 45),
            (#"{"attestationCount":3,"recentAttestations":3}"#, "attestation_burst", 20),
            (#"{"failedAssertions":2}"#, "failed_assertions", 20),
            (#"{"failedAssertions":7}"#, "failed_assertions", 30),
            (#"{"forgedAssertions":1}"#, "forged_assertions", 5),
            (#"{"forgedAssertions":50}"#, "forged_assertions", 20),
            (#"{"appVersion":"2.9.9"}"#, "app_version_below_minimum", 25),
            (#"{"osVersion":"17.6"}"#, "os_version_below_minimum", 25),
            (#"{"jailbroken":true}"#, "operator_jailbroken", 80),
            (#"{"blocked":true}"#, "operator_blocked", 100),
            (#"{"receiptInvalid":true}"#, "receipt_invalid", 10),
            (#"{"appleRiskMetric":6}"#, "apple_risk_metric", 25),
        ]
        for (profile, signal, points) in cases {
            let risk = RiskAssessment(try DeviceProfile(profileJSON: profile), app: minimums)
            #expect(risk.factors.first { $0.signal == signal }?.points == points,
                    "\(profile) → \(signal) +\(points): \(risk.factors)")
        }
        #expect(RiskAssessment(try DeviceProfile(profileJSON: #"{"appVersion":"3.0","osVersion":"18.0.0"}"#),
                               app: minimums).score == 0)
        let jb = try score(#"{"jailbroken":true,"environment":"development"}"#)
        #expect(jb.score == 80 && jb.factors.last?.points == 70 && jb.jailbreakDetected
                    && jb.deviceIntegrity == "flagged")
        #expect(try score(#"{"attestationCount":9,"recentAttestations":9,"failedAssertions":9,"forgedAssertions":9}"#)
                    .score == 100, "clamped")
    }

    /// `apple_risk_metric` adds the app's points only above its threshold, and nothing while
    /// the threshold is 0 (the default) or the metric unknown.
    @Test func theAppleRiskMetricCountsOnlyAboveTheAppsThreshold() throws {
        var tuned = app
        tuned.appleRiskMetricThreshold = 3
        tuned.appleRiskMetricPoints = 40
        func points(_ profile: String, _ app: AppRecord) throws -> Int? {
            RiskAssessment(try DeviceProfile(profileJSON: profile), app: app).factors
                .first { $0.signal == "apple_risk_metric" }?.points
        }
        #expect(try points(#"{"appleRiskMetric":3}"#, tuned) == nil, "at the threshold: nothing")
        #expect(try points(#"{"appleRiskMetric":4}"#, tuned) == 40)
        #expect(try points(#"{}"#, tuned) == nil, "unknown until a receipt was redeemed")
        #expect(try points(#"{"appleRiskMetric":1000}"#, app) == nil, "threshold 0: off")
        #expect(try score(#"{"appleRiskMetric":4}"#).score == 0)
    }

    @Test func everySignalIsInTheDocumentedTable() throws {
        let readme = try DocumentationTests.document("docs/tokens.md")
        for signal in ["development_key", "key_churn", "attestation_burst", "failed_assertions", "forged_assertions",
                       "app_version_below_minimum", "os_version_below_minimum", "operator_jailbroken",
                       "operator_blocked", "receipt_invalid", "apple_risk_metric"] {
            let documented = readme.contains("| `\(signal)`")
            #expect(documented, "docs/tokens.md risk table row for \(signal)")
        }
    }

    // The signals as the endpoints observe them.

    @Test func aDevelopmentKeyScores10() throws {
        let flow = try DeviceFlow(policy: .both)
        let (status, body) = try flow.attest(flow.device, environment: .development)
        #expect(status == 200 && intelligence(body) == (10, "trusted"))
    }

    @Test func aBurstOfKeysOnOneFingerprintAddsUntilAnHourPasses() throws {
        let flow = try DeviceFlow()
        var scores = [Int64?]()
        var last = flow.device
        for i in 0..<3 {
            last = try SoftwareDevice.generate()
            flow.fixture.clock.advance(60)
            let (_, body) = try flow.attest(last, [("deviceFingerprint", "phone-1")])
            scores.append(intelligence(body).0)
            #expect(body["deviceIntelligence"]?["attestationCount"]?.intValue == Int64(i + 1),
                    "the real count per fingerprint")
        }
        #expect(scores == [0, 15, 50], "15 per extra key, +20 for the third within an hour")
        flow.device = last
        flow.fixture.clock.advance(3_600)
        let (_, refreshed) = try flow.refresh()
        #expect(try DeviceFlow.claims(refreshed)["risk_score"]?.intValue == 30, "the burst has aged out; churn stays")
        #expect(try DeviceFlow.claims(refreshed)["attestation_count"]?.intValue == 3)
    }

    @Test func failedAssertionsCountOnTheFingerprintFor24Hours() throws {
        let flow = try DeviceFlow()
        #expect(try flow.attest(flow.device, [("deviceFingerprint", "phone-1")]).0 == 200)
        #expect(try flow.refresh().0 == 200)
        // A replayed counter, signed by the device's key: the key is invalidated and the failure counted.
        let replay = try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 1)
        #expect(flow.post(.refresh, replay).0 == 409)
        flow.device = try SoftwareDevice.generate()
        flow.fixture.clock.advance(7_200)
        let (_, body) = try flow.attest(flow.device, [("deviceFingerprint", "phone-1")])
        #expect(intelligence(body) == (25, "suspicious"), "15 churn + 10 for the failed assertion")
        flow.fixture.clock.advance(86_400)
        let (_, refreshed) = try flow.refresh()
        #expect(try DeviceFlow.claims(refreshed)["risk_score"]?.intValue == 15, "24 hours later only the churn is left")
    }

    @Test func forgedAssertionsAddAtMost20AndChangeNothingElse() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let impostor = try SoftwareDevice.generate()
        for _ in 0..<6 {
            var forged = DeviceFlow.refreshBody(for: impostor, challenge: try flow.fixture.challenge())
            forged = .object(forged.objectValue!.map {
                $0.0 == "keyId" ? ($0.0, .string(Base64.encode(flow.device.keyID))) : $0
            })
            #expect(flow.post(.refresh, forged).0 == 409)
        }
        let device = try #require(try flow.storedDevice())
        #expect(device.status == .active && device.counter == 0 && device.failedAssertions == 0,
                "the device itself is untouched")
        let (status, body) = try flow.refresh()
        let claims = try DeviceFlow.claims(body)
        #expect(status == 200 && claims["risk_score"]?.intValue == 20
                    && claims["risk_category"]?.stringValue == "trusted")
    }

    @Test func versionsBelowTheAppsMinimumsAdd25Each() throws {
        let flow = try DeviceFlow()
        try flow.setApp { $0.minAppVersion = "2.10"; $0.minOSVersion = "18.0.1" }
        let (_, body) = try flow.attest(flow.device)  // appVersion 2.1.0, osVersion 18.0
        #expect(intelligence(body) == (50, "suspicious"))
    }

    @Test func theFreeTierHasANullScoreButACategory() throws {
        let flow = try DeviceFlow(tier: .free)
        let (status, body) = try flow.attest(flow.device)
        #expect(status == 200 && body["deviceIntelligence"]?["riskScore"]?.isNull == true)
        #expect(body["deviceIntelligence"]?["riskCategory"]?.stringValue == "trusted")
        let claims = try DeviceFlow.claims(body)
        #expect(claims["risk_score"]?.isNull == true && claims["risk_category"]?.stringValue == "trusted")
        let (_, refreshed) = try flow.refresh()
        #expect(try DeviceFlow.claims(refreshed)["risk_score"]?.isNull == true)
    }

    @Test func enteringBlockedQueuesDeviceHighRiskOnce() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        _ = try flow.flag(.jailbroken)
        #expect(try flow.refresh().0 == 200)
        #expect(try flow.refresh().0 == 200)
        let events = try flow.outbox().filter { $0.event == "device.high_risk" }
        #expect(events.count == 1, "queued when the category changes, not at every refresh")
        let data = try JSONParser.parse(try #require(events.first?.dataJSON))
        #expect(data["risk_score"]?.intValue == 80 && data["previous_category"]?.stringValue == "trusted")
        #expect(data["factors"]?.arrayValue?.first?["signal"]?.stringValue == "operator_jailbroken")
    }
}
