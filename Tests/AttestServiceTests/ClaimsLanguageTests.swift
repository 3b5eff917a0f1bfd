import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// The custom claim language (issue #9 item 1): properties, operators, order, tier limits and
/// the earlier stored format.
@Suite struct ClaimsLanguageTests {
    let app = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", minAppVersion: "2.0",
                        createdAt: Timestamp(seconds: 0))

    /// Whether `when` holds for `profile`.
    func holds(_ when: String, _ profile: DeviceProfile = DeviceProfile()) throws -> Bool {
        let a = DeviceAssessment(profile: profile, app: app, rules: [try rule("k", true, when: when)])
        return a.claims.count == 1
    }

    func profile(_ json: String) throws -> DeviceProfile { try DeviceProfile(profileJSON: json) }

    @Test func numbersCompareAsNumbers() throws {
        let p = try profile(#"{"attestationCount": 3, "riskScore": 20}"#)
        for (when, expected) in [("riskScore eq 20", true), ("riskScore ne 20", false), ("riskScore lt 20", false),
                                 ("riskScore le 20", true), ("riskScore gt 19.5", true), ("riskScore ge 21", false),
                                 ("attestationCount gt 2", true), ("attestationCount in [1, 3]", true),
                                 ("attestationCount in [2]", false), ("attestationCount lt 10", true)] {
            #expect(try holds(when, p) == expected, "\(when)")
        }
    }

    @Test func versionsCompareAsDottedVersions() throws {
        let p = try profile(#"{"appVersion": "2.10.0", "osVersion": "17.4"}"#)
        for (when, expected) in [("appVersion gt 2.9", true), ("appVersion eq 2.10", true),
                                 ("appVersion lt \"2.10.1\"", true), ("appVersion ge 3", false),
                                 ("appVersion ne 2.10.0", false), ("appVersion in [\"2.9\", \"2.10\"]", true),
                                 ("osVersion le 17.4.0", true), ("osVersion gt 17.10", false),
                                 ("osVersion eq 17.40", false)] {
            #expect(try holds(when, p) == expected, "\(when)")
        }
    }

    @Test func textAndBooleansCompareExactlyAndInTakesAnArray() throws {
        let p = try profile(#"{"platform": "iPadOS", "deviceModel": "iPad13,4", "environment": "development", "#
                            + #""subscribed": true}"#)
        for (when, expected) in [("platform eq iPadOS", true), ("platform eq ipados", false),
                                 ("platform in [\"iOS\",\"iPadOS\"]", true), ("platform ne iOS", true),
                                 ("deviceModel in [\"iPhone15,2\"]", false), ("environment eq \"development\"", true),
                                 ("riskCategory ne trusted", false),
                                 ("riskCategory in [\"suspicious\",\"blocked\"]", false), ("subscribed eq true", true),
                                 ("subscribed ne true", false)] {
            #expect(try holds(when, p) == expected, "\(when)")
        }
        #expect(try holds("riskCategory eq trusted", p) && !holds("riskCategory eq suspicious", p),
                "a development key alone (10) is trusted")
    }

    @Test func aPropertyTheDeviceDidNotReportSatisfiesOnlyNe() throws {
        let p = DeviceProfile()  // no appVersion, platform, deviceModel
        #expect(try !holds("appVersion lt 99", p) && !holds("appVersion eq 1", p) && !holds("platform in [\"iOS\"]", p))
        #expect(try holds("platform ne iOS", p))
    }

    @Test func badConditionsAreRefusedWithWhatIsWrong() throws {
        for (when, says) in [("riskScore le", "PROPERTY OP VALUE"), ("jailbreak eq true", "unknown property"),
                             ("riskScore like 3", "unknown operator"), ("platform lt iOS", "needs a number or version"),
                             ("riskScore eq high", "a number"), ("platform in iOS", "JSON array"),
                             ("platform in []", "non-empty"), ("subscribed eq yes", "true or false"),
                             ("attestationCount in [1, \"2\"]", "a number")] {
            #expect { _ = try rule("k", 1, when: when) } throws: {
                ($0 as? ServiceError)?.message.contains(says) == true
            }
        }
    }

    @Test func aVersionWrittenAsAJSONNumberIsRefusedWhereClaimsAreWritten() throws {
        // 17.10 as a JSON number is 17.1 once read; as text (or bare --when) it keeps its digits.
        let number = try CustomClaims.parse(#"[{"key":"new","value":true,"#
                                            + #""when":{"property":"osVersion","op":"ge","value":17.10}}]"#)
        #expect { try CustomClaims.validate(number, tier: .pro) } throws: {
            ($0 as? ServiceError)?.message.contains("as text") == true
        }
        let text = try CustomClaims.parse(#"[{"key":"new","value":true,"#
                                          + #""when":{"property":"osVersion","op":"ge","value":"17.10"}}]"#)
        try CustomClaims.validate(text, tier: .pro)
        try CustomClaims.validate([try rule("new", true, when: "osVersion ge 17.10")], tier: .pro)
    }

    @Test func laterClaimsWithTheSameKeyWinAndTheTraceSaysWhy() throws {
        let rules = [try rule("tier", "free"), try rule("tier", "premium", when: "subscribed eq true"),
                     try rule("tier", "vip", when: "riskScore lt 0")]
        let a = DeviceAssessment(profile: try profile(#"{"subscribed": true}"#), app: app, rules: rules, explain: true)
        #expect(a.claims.count == 1 && a.claims[0].1 == "premium")
        #expect(a.steps.map(\.applied) == [true, true, false])
        #expect(a.steps[1].why == "subscribed true eq true: yes" && a.steps[2].why == "riskScore 0 lt 0: no")
        #expect(DeviceAssessment(profile: DeviceProfile(), app: app, rules: rules).claims[0].1 == "free")
    }

    @Test func tierLimitsAreEnforcedWithAClearError() throws {
        let five = try (0..<5).map { try rule("k\($0)", 1, when: "riskScore le 20") }
        try CustomClaims.validate(five, tier: .pro)
        #expect { try CustomClaims.validate(five + [try rule("k5", 1)], tier: .pro) } throws: {
            ($0 as? ServiceError)?.message.contains("the pro tier allows 5 custom claim(s); this would make 6") == true
        }
        try CustomClaims.validate(Array(repeating: try rule("k", 1), count: 10), tier: .business)
        try CustomClaims.validate(Array(repeating: try rule("k", 1), count: 20), tier: .enterprise)
        #expect(throws: ServiceError.self) {
            try CustomClaims.validate(Array(repeating: try rule("k", 1), count: 21), tier: .enterprise)
        }
        try CustomClaims.validate([try rule("k", 1)], tier: .free)
        #expect { try CustomClaims.validate([try rule("k", 1, when: "riskScore le 20")], tier: .free) } throws: {
            ($0 as? ServiceError)?.message.contains("need the pro tier") == true
        }
        #expect(throws: ServiceError.self) {
            try CustomClaims.validate([try rule("k", 1), try rule("j", 2)], tier: .free)
        }
        #expect(throws: ServiceError.self) {
            try CustomClaims.validate([try rule(String(repeating: "k", count: 65), 1)], tier: .pro)
        }
        #expect(throws: ServiceError.self) {
            try CustomClaims.validate([try rule("k", .string(String(repeating: "v", count: 1100)))], tier: .pro)
        }
    }

    @Test func theEarlierStoredFormatReadsAsTheSameClaimsAndRewritesLosslessly() throws {
        let old = #"[{"type":"static","key":"user_tier","value":{"seats":3}},"#
            + #"{"type":"conditional","key":"beta","property":"riskCategory","equals":"trusted","value":true},"#
            + #"{"type":"conditional","key":"os","property":"osVersion","equals":"17.4","value":"seventeen"}]"#
        let rules = try CustomClaims.parse(old)
        #expect(rules == [ClaimRule(key: "user_tier", value: ["seats": 3]),
                          try rule("beta", true, when: #"riskCategory eq "trusted""#),
                          try rule("os", "seventeen", when: "osVersion eq 17.4")])
        let rewritten = CustomClaims.encode(rules)
        #expect(rewritten == #"[{"key":"user_tier","value":{"seats":3}},"#
                    + #"{"key":"beta","value":true,"when":{"property":"riskCategory","op":"eq","value":"trusted"}},"#
                    + #"{"key":"os","value":"seventeen","when":{"property":"osVersion","op":"eq","value":"17.4"}}]"#)
        #expect(try CustomClaims.parse(rewritten) == rules, "the current format reads back the same")
        #expect(throws: ServiceError.self) { try CustomClaims.parse(#"[{"type":"dynamic","key":"k","value":1}]"#) }
    }

    @Test func oldStoredClaimsStillApplyAtValidateAndRefresh() throws {
        let flow = try DeviceFlow(tier: .pro)
        try flow.setStoredClaims(#"[{"type":"static","key":"plan","value":"basic"},"#
                                 + #"{"type":"conditional","key":"plan","property":"platform","#
                                 + #""equals":"iOS","value":"ios-plan"}]"#)
        let (status, body) = try flow.attest(flow.device)
        #expect(status == 200 && body["customClaims"]?["plan"]?.stringValue == "ios-plan")
        let (s2, refreshed) = try flow.refresh()
        #expect(try s2 == 200 && DeviceFlow.claims(refreshed)["custom_claims"]?["plan"]?.stringValue == "ios-plan")
    }

    @Test func aStoredClaimOverTodaysSizeLimitsDoesNotTakeTheOthersWithIt() throws {
        // Written before keys and values had limits: it keeps reading, and so do the others.
        let flow = try DeviceFlow(tier: .pro)
        let blob = String(repeating: "x", count: 1_100)
        try flow.setStoredClaims(#"[{"type":"static","key":"tier","value":"premium"},"#
                                 + #"{"type":"static","key":"blob","value":"\#(blob)"}]"#)
        let (status, body) = try flow.attest(flow.device)
        #expect(status == 200 && body["customClaims"]?["tier"]?.stringValue == "premium"
                    && body["customClaims"]?["blob"]?.stringValue == blob)
        #expect(throws: ServiceError.self, "writing it today is refused") {
            try CustomClaims.validate(try CustomClaims.parse(#"[{"key":"blob","value":"\#(blob)"}]"#), tier: .pro)
        }
    }

    @Test func afterADowngradeOnlyWhatTheTierAllowsApplies() throws {
        let flow = try DeviceFlow(tier: .pro)
        try flow.setClaims([try rule("plan", "basic"), try rule("trusted", true, when: "riskScore le 20")])
        let (_, pro) = try flow.attest(flow.device)
        #expect(pro["customClaims"]?["trusted"]?.stringValue == "true")
        try flow.context.store.write { txn in
            var org = try #require(try txn.org(named: "acme"))
            org.tier = .free
            try txn.put(org)
        }
        let (status, refreshed) = try flow.refresh()
        let claims = try DeviceFlow.claims(refreshed)["custom_claims"]
        #expect(status == 200 && claims?["plan"]?.stringValue == "basic", "the static claim still applies")
        #expect(claims?["trusted"] == nil,
                "free evaluates no condition (it would show the risk score free tokens leave out)")
    }

    @Test func claimsAreEvaluatedAfreshAtEveryRefresh() throws {
        let flow = try DeviceFlow(tier: .pro)
        try flow.enroll()
        try flow.setClaims([try rule("gate", "open", when: "riskCategory eq trusted"),
                            try rule("gate", "closed", when: "riskCategory ne trusted")])
        let (_, first) = try flow.refresh()
        #expect(try DeviceFlow.claims(first)["custom_claims"]?["gate"]?.stringValue == "open")
        _ = try flow.flag(.jailbroken)
        let (_, second) = try flow.refresh()
        #expect(try DeviceFlow.claims(second)["custom_claims"]?["gate"]?.stringValue == "closed",
                "the next refresh sees the flag")
    }
}
