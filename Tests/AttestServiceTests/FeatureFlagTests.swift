import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Testing

/// Feature flags' domain (docs/flags.md): conditions and every operator, missing values, the
/// tier table, rollout buckets, the evaluation order and its explanation, the admin's errors,
/// and the org API's auth.
@Suite struct FeatureFlagTests {
    static func cond(_ text: String) throws -> CompiledCondition {
        try #require(CompiledCondition(try FeatureFlagConditions.parse(text: text)))
    }

    static func device(riskScore: Int = 10, appVersion: String = "2.10.0",
                       entitlements: [String] = []) throws -> FeatureFlagCaller {
        var profile = try DeviceProfile(profileJSON: #"{"riskScore":\#(riskScore),"appVersion":"\#(appVersion)"}"#)
        profile.entitlements = entitlements
        let app = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme",
                            createdAt: Timestamp(seconds: 0))
        return .device(FeatureFlagDevice(deviceID: "dev-1", lineageDigest: Array(0..<16), profile: profile,
                                         risk: RiskAssessment(profile, app: app)))
    }

    @Test func versionsCompareAsVersionsWithPreReleasesBelow() {
        #expect(Versions.compare("2.10", "2.9") == 1)
        #expect(Versions.compare("2.1", "2.1.0") == 0)
        #expect(Versions.compare("2.1.3-beta", "2.1.3") == -1)
        #expect(Versions.compare("2.1.3-beta.2", "2.1.3-beta.10") == -1)
        #expect(Versions.compare("", "1") == nil && Versions.compare("abc", "1") == nil)
        #expect(!Versions.isVersion(String(repeating: "1", count: 65)))
    }

    /// Every operator, on a number, a version, text, a bool, a list and a custom header.
    @Test func everyOperator() throws {
        let caller = try Self.device(riskScore: 12, appVersion: "2.10.0", entitlements: ["Pro"])
        let headers = FeatureFlagTargeting(headers: [("X-Custom-plan", "Team-Pro"), ("X-App-Version", "3.0"),
                                                     ("X-Custom-seats", "12")])
        let table: [(String, Bool)] = [
            ("riskScore eq 12", true), ("riskScore neq 12", false), ("riskScore gt 11.5", true),
            ("riskScore gte 12", true), ("riskScore lt 12", false), ("riskScore lte 12", true),
            ("riskScore in [1, 12]", true), ("riskScore not_in [12]", false), ("riskScore in 12", true),
            ("appVersion gt 2.9", true), ("appVersion eq 2.10", true), ("appVersion lt 2.10.1", true),
            ("appVersion gte 2.10.0-beta", true), ("appVersion starts_with 2.1", true),
            ("appVersion contains .10", true),
            ("riskCategory eq \"trusted\"", true), ("riskCategory in [\"suspicious\"]", false),
            ("riskCategory contains TRUST", true), ("riskCategory starts_with Tr", true),
            ("jailbroken eq false", true), ("jailbroken neq false", false),
            ("entitlement contains pro", true), ("entitlement in [\"Pro\",\"team\"]", true),
            ("entitlement not_in [\"Pro\"]", false),
            ("attestation_status eq attested", true), ("risk_score lte 20", true),
            ("custom.plan eq Team-Pro", true), ("custom.PLAN contains pro", true),
            ("custom.plan starts_with team", true), ("custom.plan in [\"x\",\"Team-Pro\"]", true),
            ("custom.plan not_in [\"Team-Pro\"]", false), ("custom.seats gt 9", true), ("custom.seats lte 11", false),
            ("app_version gte 2.10", true), ("app_version lt 3", false),
        ]
        for (text, expected) in table {
            let c = try Self.cond(text)
            #expect(c.holds(caller.value(c.attribute, headers)) == expected, "\(text)")
        }
    }

    /// A missing value fails every operator, neq and not_in included.
    @Test func aMissingValueFailsEveryOperator() throws {
        let caller = FeatureFlagCaller.apiKey(sdkDeviceID: nil)
        for text in ["riskScore eq 1", "riskScore neq 1", "riskScore gt 1", "riskScore gte 1", "riskScore lt 1",
                     "riskScore lte 1", "riskScore in [1]", "riskScore not_in [1]", "appVersion contains 1",
                     "appVersion starts_with 1", "custom.plan neq x", "custom.plan not_in [\"x\"]",
                     "app_version neq 1.0", "country not_in [\"DE\"]", "entitlement not_in [\"pro\"]",
                     "jailbroken neq true"] {
            let c = try Self.cond(text)
            #expect(!c.holds(caller.value(c.attribute, .none)), "\(text) with no value")
        }
        // A device that reported no app version: missing too.
        let noVersion = try Self.device(appVersion: "")
        let c = try Self.cond("appVersion neq 1.0")
        #expect(!c.holds(noVersion.value(c.attribute, .none)))
    }

    /// Server attributes never read a header: the attacker forges every header it can think of.
    @Test func forgedHeadersChangeNoServerAttribute() throws {
        let caller = try Self.device(riskScore: 80, appVersion: "1.0")
        let forged = FeatureFlagTargeting(headers: [
            ("X-Risk-Score", "0"), ("X-RiskScore", "0"), ("X-Custom-riskScore", "0"), ("X-App-Version", "9.9"),
            ("X-AppVersion", "9.9"), ("X-Jailbroken", "false"), ("X-Entitlement", "pro"), ("X-Attest", "hardware"),
            ("X-Risk-Category", "trusted"), ("X-Attestation-Status", "attested"),
        ])
        for text in ["riskScore lte 20", "risk_score lte 20", "appVersion gte 9", "riskCategory eq trusted",
                     "entitlement contains pro"] {
            let c = try Self.cond(text)
            #expect(!c.holds(caller.value(c.attribute, forged)), "\(text) must use the server's value")
        }
        let status = try Self.cond("attestation_status eq attested")
        #expect(!status.holds(FeatureFlagCaller.apiKey(sdkDeviceID: nil).value(status.attribute, forged)),
                "an API key is unattested whatever it sends")
        // The client-claimed twin does read the header, as documented.
        let claimed = try Self.cond("app_version gte 9")
        #expect(claimed.holds(caller.value(claimed.attribute, forged)))
    }

    @Test func conditionsAreCheckedWhereWritten() throws {
        for bad in ["riskScore contains 1", "riskCategory gt a", "jailbroken in [true]", "nope eq 1",
                    "riskScore between 1", "appVersion gt x2", "riskScore in []", "custom. eq 1",
                    "entitlement eq pro", "riskScore eq \"a\"", "riskScore lte"] {
            #expect(throws: ServiceError.self, "\(bad)") { try FeatureFlagConditions.parse(text: bad) }
        }
        let many = "[" + (0...100).map(String.init).joined(separator: ",") + "]"
        #expect(throws: ServiceError.self) { try FeatureFlagConditions.parse(text: "riskScore in \(many)") }
        let json = try FeatureFlagConditions.parse(json: ["attribute": "app_version", "operator": "gte",
                                                          "value": "2.10"])
        #expect(FeatureFlagConditions.text(json) == #"app_version gte "2.10""#)
        #expect(try FeatureFlagConditions.parse(text: "appVersion gte 2.10").operandJSON == #""2.10""#,
                "a bare version keeps its digits")
    }

    /// The CLI's `--when` and the API's JSON make one condition: a numeric operand of a
    /// `custom.<key>` is a number on both, so ordering compares numbers (10.5 > 10.25; as
    /// versions 10.5 < 10.25). Before, the CLI kept it as text and compared versions.
    @Test func cliConditionOnACustomNumberComparesNumbersAsNumbers() throws {
        let cli = try #require(CompiledCondition(try FeatureFlagConditions.parse(text: "custom.score gt 10.25")))
        let api = try #require(CompiledCondition(try FeatureFlagConditions.parse(
            json: .object([("attribute", "custom.score"), ("operator", "gt"), ("value", .double(10.25))]))))
        #expect(api.holds(.string("10.5")), "the API's condition: 10.5 > 10.25")
        #expect(cli.holds(.string("10.5")), "the CLI's condition on the same header: 10.5 > 10.25 as numbers")
        #expect(cli.source == api.source, "one condition, two forms")
        let lte = try #require(CompiledCondition(try FeatureFlagConditions.parse(text: "custom.ratio lte 2.25")))
        #expect(!lte.holds(.string("2.5")), "2.5 is not <= 2.25")
        // Quoted, the operand is text, and a version still compares as a version.
        let quoted = try #require(CompiledCondition(try FeatureFlagConditions.parse(text: #"custom.build gt "2.10""#)))
        #expect(quoted.holds(.string("2.10.1")) && !quoted.holds(.string("2.9")))
    }

    /// `--when 'custom.delta gt -5'` was the text "-5" (neither a JSON number nor a version:
    /// 400); the API takes -5, so the CLI does too.
    @Test func cliTakesANegativeNumberOnACustomAttribute() throws {
        let api = try FeatureFlagConditions.parse(
            json: .object([("attribute", "custom.delta"), ("operator", "gt"), ("value", .int(-5))]))
        #expect(api.operandJSON == "-5")
        #expect(throws: Never.self, "the --when form of the same condition") {
            _ = try FeatureFlagConditions.parse(text: "custom.delta gt -5")
        }
        #expect(try FeatureFlagConditions.parse(text: "custom.delta gt -5") == api)
        #expect(try Self.cond("custom.delta gt -5").holds(.string("-4")))
    }

    @Test func valuesAreTypedAndStoredCompact() throws {
        #expect(try FeatureFlagValueType.check("true", type: .bool) == "true")
        #expect(try FeatureFlagValueType.check("2.0", type: .int) == "2")
        #expect(try FeatureFlagValueType.check("0.25", type: .double) == "0.25")
        #expect(try FeatureFlagValueType.check(#""a\nb""#, type: .string) == #""a\nb""#)
        #expect(try FeatureFlagValueType.check(#"{ "a" : [1, 2] }"#, type: .json) == #"{"a":[1,2]}"#)
        for (text, type) in [("1", FeatureFlagType.bool), ("2.5", .int), ("\"1\"", .double), ("1", .string),
                             ("\"x\"", .json), ("nope", .string), ("9.3e18", .int)] {
            #expect(throws: ServiceError.self, "\(text) as \(type)") {
                try FeatureFlagValueType.check(text, type: type)
            }
        }
        let big = "\"" + String(repeating: "x", count: 1_023) + "\""
        #expect(throws: ServiceError.self) { try FeatureFlagValueType.check(big, type: .string) }
    }

    /// The tier table of docs/flags.md, pinned.
    @Test func tierTable() {
        let rows: [(Tier, Int, Int, Int, Bool, Bool)] = [
            (.free, 10, 1, 0, true, false), (.pro, 50, 3, 5, false, true), (.business, 200, 10, 20, false, true),
            (.enterprise, 10_000, 64, 100, false, true),
        ]
        for (tier, flags, envs, rules, onOff, rollouts) in rows {
            let l = tier.featureFlagLimits
            #expect(l.flags == flags && l.environments == envs && l.rulesPerFlag == rules && l.onOffOnly == onOff
                    && l.rollouts == rollouts && l.overridesPerFlag == 1_000 && l.notes == 500, "\(tier)")
        }
        let e = Tier.pro.featureFlagLimits.exceeded("targeting rules per flag", limit: 5, wouldBe: 6)
        #expect(e.status == 403 && e.message == "The pro tier allows 5 targeting rules per flag; this would make 6.")
    }

    /// Pinned vectors: SHA-256(identity ‖ 00 ‖ key)[0..<8] big-endian % 100 (computed apart with Python's hashlib).
    @Test func rolloutBuckets() {
        #expect(FeatureFlagBucket.bucket(identity: Array(0..<16), key: "beta") == 69)
        #expect(FeatureFlagBucket.bucket(identity: Array("qa-1".utf8), key: "color") == 93)
        #expect(FeatureFlagBucket.bucket(identity: Array("device-123".utf8), key: "new_checkout") == 27)
        #expect(FeatureFlagBucket.bucket(identity: [UInt8](repeating: 0, count: 16), key: "a") == 18)
        #expect(FeatureFlagBucket.admits(percent: 100, identity: nil, key: "k"))
        #expect(!FeatureFlagBucket.admits(percent: 99, identity: nil, key: "k"))
        #expect(!FeatureFlagBucket.admits(percent: 0, identity: [1], key: "k"))
        #expect(FeatureFlagBucket.admits(percent: 70, identity: Array(0..<16), key: "beta"))
        #expect(!FeatureFlagBucket.admits(percent: 69, identity: Array(0..<16), key: "beta"))
    }

    static func flag(_ key: String, _ type: FeatureFlagType = .bool, defaults: [(String, String)],
                     rollouts: [FeatureFlagRollout] = [], rules: [FeatureFlagRule] = []) -> FeatureFlagRecord {
        FeatureFlagRecord(key: key, type: type, description: "", createdAt: Timestamp(seconds: 0),
                          updatedAt: Timestamp(seconds: 0),
                          defaults: defaults.map { FeatureFlagValue(environment: $0.0, valueJSON: $0.1) },
                          rollouts: rollouts, rules: rules)
    }

    static func compiled(_ tier: Tier = .pro, overrides: UInt32 = 0) throws -> CompiledFeatureFlags {
        let rule = FeatureFlagRule(name: "beta", environment: "", active: true, rollout: 100, valueJSON: "true",
                                   conditions: [try FeatureFlagConditions.parse(text: "riskScore lte 20")])
        let off = FeatureFlagRule(name: "off", environment: "", active: false, rollout: 100, valueJSON: "false",
                                  conditions: [try FeatureFlagConditions.parse(text: "riskScore lte 100")])
        let app = FeatureFlagAppRecord(generation: 7, environments: [
            FeatureFlagEnvironment(name: "production", createdAt: Timestamp(seconds: 0)),
            FeatureFlagEnvironment(name: "staging", createdAt: Timestamp(seconds: 0)),
        ], flagCount: 3, overrideCount: overrides)
        return CompiledFeatureFlags(appID: "ABCDE12345.com.example.app", tier: tier, app: app, flags: [
            flag("z_color", .string, defaults: [("production", #""blue""#)],
                 rollouts: [FeatureFlagRollout(environment: "production", percent: 70, valueJSON: #""green""#)]),
            flag("beta", defaults: [("production", "false"), ("staging", "true")], rules: [off, rule]),
            flag("only_staging", defaults: [("staging", "1")]),
        ], notes: [])
    }

    @Test func evaluationOrderAndAnswers() throws {
        let c = try Self.compiled()
        #expect(c.generation == 7 && c.hasEnvironment("staging") && !c.hasEnvironment("qa"))
        #expect(String(decoding: c.defaultsAnswer(environment: "production"), as: UTF8.self)
                == #"{"flags":{"beta":false,"z_color":"blue"}}"#)
        #expect(String(decoding: c.defaultsAnswer(environment: "qa"), as: UTF8.self) == #"{"flags":{}}"#)
        let trusted = try Self.device(riskScore: 10)  // lineage digest 00…0f: bucket of z_color below
        let bucket = FeatureFlagBucket.bucket(identity: Array(0..<16), key: "z_color")
        let color = bucket < 70 ? #""green""# : #""blue""#
        let answer = String(decoding: c.answer(environment: "production", caller: trusted, targeting: .none,
                                               overrides: [], now: Timestamp(seconds: 1)), as: UTF8.self)
        #expect(answer == #"{"flags":{"beta":true,"z_color":\#(color)}}"#)
        let risky = try Self.device(riskScore: 50)
        #expect(String(decoding: c.answer(environment: "staging", caller: risky, targeting: .none, overrides: [],
                                          now: Timestamp(seconds: 1)), as: UTF8.self)
                == #"{"flags":{"beta":true,"only_staging":1}}"#, "staging's default (rule fails, inactive one skipped)")
        // An override wins over the rule; device: over sdk:; an expired one does not apply.
        let overrides = [
            FeatureFlagOverrideRecord(subject: .sdk("qa"), flagKey: "beta", valueJSON: "false", expiresAt: nil,
                                      createdAt: Timestamp(seconds: 0), note: ""),
            FeatureFlagOverrideRecord(subject: .device("dev-1"), flagKey: "z_color", valueJSON: #""pink""#,
                                      expiresAt: Timestamp(seconds: 100), createdAt: Timestamp(seconds: 0), note: ""),
        ]
        let withOverrides = try Self.compiled(overrides: 2)
        let qa = FeatureFlagTargeting(headers: [("X-Device-ID", "qa")])
        #expect(String(decoding: withOverrides.answer(environment: "production", caller: trusted, targeting: qa,
                                                      overrides: overrides, now: Timestamp(seconds: 50)),
                       as: UTF8.self) == #"{"flags":{"beta":false,"z_color":"pink"}}"#)
        #expect(String(decoding: withOverrides.answer(environment: "production", caller: trusted, targeting: .none,
                                                      overrides: overrides, now: Timestamp(seconds: 100)),
                       as: UTF8.self) == answer, "expired, and sdk:qa not this caller's")
        // Explain text, for attestctl flags test.
        let steps = withOverrides.explain(environment: "production", caller: trusted, targeting: qa,
                                          overrides: overrides, now: Timestamp(seconds: 50), key: nil)
        #expect(steps.map(\.key) == ["beta", "only_staging", "z_color"])
        #expect(steps.map(\.valueJSON) == ["false", nil, #""pink""#])
        #expect(steps[0].steps == ["override sdk:qa (client-claimed X-Device-ID)"])
        #expect(steps[1].steps == ["no default in production: left out"])
        #expect(steps[2].steps == ["override device:dev-1"])
        let why = c.explain(environment: "production", caller: risky, targeting: .none, overrides: [],
                            now: Timestamp(seconds: 1), key: "beta")
        #expect(why == [FeatureFlagExplanation(key: "beta", valueJSON: "false", steps: [
            "rule 2 'beta' did not match: riskScore 50 lte 20: no", "default (production)",
        ])])
        let apiKey = c.explain(environment: "production", caller: .apiKey(sdkDeviceID: nil), targeting: .none,
                               overrides: [], now: Timestamp(seconds: 1), key: "z_color")
        #expect(apiKey[0].steps.first == "rollout 70% (production): rollout 70%: no identity (an API key without "
                                         + "X-Device-ID): no")
    }

    /// After a downgrade: no rules and no rollouts on free, values stay.
    @Test func onlyWhatTheTierAllowsIsServed() throws {
        let free = try Self.compiled(.free)
        #expect(!free.hasEnvironment("staging"), "free has one environment")
        let answer = String(decoding: free.answer(environment: "production", caller: try Self.device(riskScore: 10),
                                                  targeting: .none, overrides: [], now: Timestamp(seconds: 1)),
                            as: UTF8.self)
        #expect(answer == #"{"flags":{"beta":false,"z_color":"blue"}}"#)
    }

    @Test func releaseNotesVisibility() throws {
        func note(_ v: String, _ at: Int64, _ byte: UInt8) -> ReleaseNoteRecord {
            ReleaseNoteRecord(id: [UInt8](repeating: byte, count: 16), version: v, title: "t\(v)", body: "b",
                              publishAt: Timestamp(seconds: at), createdAt: Timestamp(seconds: 0),
                              updatedAt: Timestamp(seconds: 0))
        }
        let notes = [note("1.0", 0, 1), note("1.1", 0, 2), note("2.0", 0, 3), note("2.1", 0, 4), note("1.5", 999, 5)]
        let versions = DeviceVersionsRecord(first: "1.0", firstAt: Timestamp(seconds: 0), latest: "2.0",
                                            latestAt: Timestamp(seconds: 0))
        let seen: [[UInt8]: Timestamp] = [[UInt8](repeating: 2, count: 16): Timestamp(seconds: 1)]
        let shown = ReleaseNotes.visible(notes, versions: versions, seen: seen, now: Timestamp(seconds: 10), limit: 20)
        #expect(shown.map(\.version) == ["2.0"])
        #expect(ReleaseNotes.visible(notes, versions: versions, seen: [:], now: Timestamp(seconds: 10), limit: 20)
            .map(\.version) == ["2.0", "1.1"])
        #expect(ReleaseNotes.visible(notes, versions: nil, seen: [:], now: Timestamp(seconds: 10), limit: 20).isEmpty)
        let text = String(decoding: ReleaseNotes.answer([shown[0]]), as: UTF8.self)
        #expect(text == #"{"releaseNotes":[{"id":"03030303-0303-0303-0303-030303030303","version":"2.0","#
                + #""title":"t2.0","body":"b","publishedAt":"1970-01-01T00:00:00Z"}]}"#)
        let id = "0f8e2a3c-1b2d-4e5f-8a9b-0c1d2e3f4a5b"
        #expect(ReleaseNotes.parseID(id).map(ReleaseNotes.idText) == id.uppercased())
        #expect(ReleaseNotes.parseID(id.uppercased()) == ReleaseNotes.parseID(id))
        for bad in ["", "0f8e2a3c1b2d4e5f8a9b0c1d2e3f4a5b", "0f8e2a3c-1b2d-4e5f-8a9b-0c1d2e3f4a5g", id + "0"] {
            #expect(ReleaseNotes.parseID(bad) == nil, "\(bad)")
        }
    }

    // MARK: admin and API

    final class API {
        let fixture: Fixture
        let key: String

        init(fixture: Fixture, key: String) {
            self.fixture = fixture
            self.key = key
        }

        init(tier: Tier = .pro, writesPerMinute: Int = 0) throws {
            fixture = try Fixture(tier: tier, configure: { $0.flagWritesPerOrganizationPerMinute = writesPerMinute })
            key = try WebhooksAPITests.API.makeKey(fixture, org: "acme")
        }

        func call(_ method: String, _ path: String, _ query: String = "app_id=" + Fixture.appID,
                  body: String? = nil, key: String? = nil) -> (Int, JSONValue) {
            var request = Fixture.request(method, path, body: body,
                                          headers: ["Authorization": "Bearer " + (key ?? self.key)])
            request.query = query
            do {
                let response = try FlagsAdminEndpoint.route(request, fixture.context)
                return (response.status, (try? JSONParser.parse(response.body)) ?? .null)
            } catch {
                let e = ServiceError.unexpected(error)
                return (e.status, e.body(requestID: "t"))
            }
        }
    }

    /// A device the server verified: its server attributes come from its records, its rollout
    /// identity is its lineage digest, and an override can name it (not another app's device).
    @Test func anEnrolledDeviceIsReadFromTheStore() throws {
        let flow = try DeviceFlow()
        _ = try flow.enroll()
        let device = try #require(try flow.storedDevice())
        let (app, org) = try flow.context.store.read { txn in
            try FeatureFlagAdmin.app(Fixture.appID, org: nil, in: txn)
        }
        let read = try flow.context.store.read { txn in
            try FeatureFlagDevice.read(device, app: app, org: org, now: flow.fixture.clock.now(), in: txn, flow.context)
        }
        #expect(read.deviceID == device.deviceID && read.lineageDigest == LineageKey.of(device).digest)
        let caller = FeatureFlagCaller.device(read)
        for text in ["attestation_status eq attested", "riskCategory eq trusted", "jailbroken eq false"] {
            let c = try Self.cond(text)
            #expect(c.holds(caller.value(c.attribute, .none)), "\(text)")
        }
        let key = try WebhooksAPITests.API.makeKey(flow.fixture, org: "acme")
        let api = API(fixture: flow.fixture, key: key)
        #expect(api.call("POST", "/api/v1/org/flags", "",
                         body: #"{"app_id":"\#(Fixture.appID)","key":"beta","type":"bool","value":false}"#).0 == 201)
        let (status, override) = api.call("POST", "/api/v1/org/flags/beta/overrides",
                                          body: #"{"device_id":"\#(device.deviceID)","forced_value":true}"#)
        #expect(status == 201 && override["subject"]?.stringValue == "device:" + device.deviceID)
        let compiled = try flow.context.store.read { txn in
            try CompiledFeatureFlags.build(appID: Fixture.appID, tier: org.tier, in: txn)
        }
        let overrides = try flow.context.store.read { txn in
            try txn.featureFlagOverrides(appID: Fixture.appID, subject: .device(device.deviceID))
        }
        #expect(compiled.hasOverrides)
        #expect(String(decoding: compiled.answer(environment: "production", caller: caller, targeting: .none,
                                                 overrides: overrides, now: flow.fixture.clock.now()),
                       as: UTF8.self) == #"{"flags":{"beta":true}}"#)
        // Another app's device cannot be named.
        try flow.context.store.write([.durable]) { txn in
            try txn.put(AppRecord(teamID: "OTHER12345", bundleID: "com.other", org: "acme",
                                  createdAt: Timestamp(seconds: 0)))
        }
        #expect(api.call("POST", "/api/v1/org/flags", "",
                         body: #"{"app_id":"OTHER12345.com.other","key":"beta","type":"bool","value":false}"#).0 == 201)
        let (foreign, _) = api.call("POST", "/api/v1/org/flags/beta/overrides", "app_id=OTHER12345.com.other",
                                    body: #"{"device_id":"\#(device.deviceID)","forced_value":true}"#)
        #expect(foreign == 404, "the device is \(Fixture.appID)'s")
    }

    @Test func apiCreatesChangesAndQueuesFlagChanged() throws {
        let api = try API()
        let create = #"{"app_id":"\#(Fixture.appID)","key":"beta","type":"bool","value":false}"#
        let (created, flag) = api.call("POST", "/api/v1/org/flags", "", body: create)
        #expect(created == 201 && flag["values"]?["production"] == false, "\(flag.jsonText)")
        let (ruled, withRule) = api.call("POST", "/api/v1/org/flags/beta/rules", body: #"""
            {"name":"trusted","conditions":[{"attribute":"riskScore","operator":"lte","value":20}],"value":true,
             "rollout_percentage":50}
            """#)
        #expect(ruled == 201 && withRule["rules"]?.arrayValue?.count == 1, "\(withRule.jsonText)")
        #expect(api.call("PUT", "/api/v1/org/flags/beta", body: #"{"value":true}"#).1["values"]?["production"] == true)
        #expect(api.call("PUT", "/api/v1/org/flags/beta/rollout",
                         body: #"{"percentage":30,"value":false}"#).0 == 200)
        #expect(api.call("POST", "/api/v1/org/flag-environments", body: #"{"name":"staging"}"#).0 == 201)
        #expect(api.call("POST", "/api/v1/org/flag-environments", body: #"{"name":"staging"}"#).0 == 409)
        let (overridden, o) = api.call("POST", "/api/v1/org/flags/beta/overrides",
                                       body: #"{"sdk_device_id":"qa-1","forced_value":true}"#)
        #expect(overridden == 201 && o["subject"] == "sdk:qa-1")
        #expect(api.call("GET", "/api/v1/org/flags/beta/overrides").1["overrides"]?.arrayValue?.count == 1)
        #expect(api.call("DELETE", "/api/v1/org/flags/beta/overrides",
                         "app_id=\(Fixture.appID)&sdk_device_id=qa-1").0 == 200)
        #expect(api.call("DELETE", "/api/v1/org/flags/beta/rules/1").1["rules"]?.arrayValue?.isEmpty == true)
        let (noted, note) = api.call("POST", "/api/v1/org/release-notes", "",
                                     body: #"{"app_id":"\#(Fixture.appID)","version":"2.1","title":"New","body":"x"}"#)
        #expect(noted == 201 && note["published"] == true)
        #expect(api.call("POST", "/api/v1/org/release-notes", "",
                         body: #"{"app_id":"\#(Fixture.appID)","version":"2.1.0","title":"Again"}"#).0 == 409)
        #expect(api.call("DELETE", "/api/v1/org/release-notes/" + (note["id"]?.stringValue ?? "")).0 == 200)
        #expect(api.call("DELETE", "/api/v1/org/flags/beta").0 == 200)
        #expect(api.call("GET", "/api/v1/org/flags/beta").0 == 404)
        let (state, events) = try api.fixture.context.store.read { txn in
            (try txn.featureFlagApp(appID: Fixture.appID), try txn.outbox().map(\.event))
        }
        let flagEvents = events.filter { $0.event == "flag.changed" }
        let actions = flagEvents.compactMap { (try? JSONParser.parse($0.dataJSON))?["action"]?.stringValue }
        #expect(actions == ["created", "rule_added", "updated", "rollout_set", "environment_added", "override_set",
                            "override_removed", "rule_removed", "deleted"],
                "one per change, none for notes or refusals")
        let first = try #require(try? JSONParser.parse(flagEvents[0].dataJSON))
        #expect(first["app_id"]?.stringValue == Fixture.appID && first["actor"] == "api" && first["flag_key"] == "beta"
                && first["environment"] == "production" && first["organization"] == "acme")
        #expect(state?.flagCount == 0 && state?.overrideCount == 0 && state?.noteCount == 0)
        #expect(state?.generation == 11, "9 flag changes and 2 note changes each bumped the generation")
        let report = try api.fixture.context.store.check()
        let problems = report.crossProblems + report.databases.flatMap(\.problems)
        #expect(report.isConsistent, "the counts FeatureFlagAdmin keeps add up: \(problems)")
    }

    @Test func apiRefusesHeartbeatKeysAndOtherOrganizationsApps() throws {
        let api = try API()
        let (heartbeatKey, record) = APIKeys.generate(org: "acme", name: "hb", scope: .heartbeat,
                                                      random: SystemRandom(), now: api.fixture.clock.now())
        try api.fixture.context.store.write([.durable]) { txn in try txn.put(record) }
        #expect(api.call("GET", "/api/v1/org/flags", key: heartbeatKey).0 == 403)
        #expect(api.call("GET", "/api/v1/org/flags", key: "aat_nope").0 == 401)
        let other = try WebhooksAPITests.API.makeKey(api.fixture, org: "evil")
        for (method, path, body) in [("GET", "/api/v1/org/flags", nil as String?),
                                     ("PUT", "/api/v1/org/flags/beta", #"{"value":true}"#),
                                     ("POST", "/api/v1/org/flag-environments", #"{"name":"qa"}"#),
                                     ("GET", "/api/v1/org/release-notes", nil)] {
            let (status, body) = api.call(method, path, body: body, key: other)
            #expect(status == 404 && body["code"] == "not_found", "\(method) \(path): \(status)")
        }
        #expect(api.call("GET", "/api/v1/org/flags", "app_id=A&app_id=B").0 == 400)
        #expect(api.call("PATCH", "/api/v1/org/flags").0 == 405)
    }

    /// The attacker: an organization with its own app, API key of scope `all`, sets and removes
    /// overrides naming another organization's device by its keyId. Before, `device_key_id`
    /// was resolved across every organization and the 404 named the victim's deviceId; now a
    /// foreign keyId reads exactly as one attested nowhere, on both verbs.
    @Test func anotherOrganizationsDeviceKeyIDRevealsNothing() throws {
        let pool = try FlagsPoolTests.Pool()  // acme: an enrolled device
        let victim = try #require(try pool.flow.storedDevice())
        let fixture = pool.flow.fixture
        let now = fixture.clock.now()
        let evilApp = "ZZZZZ99999.com.evil.app"
        try fixture.context.store.write([.durable]) { txn in
            try txn.put(OrgRecord(name: "evil", tier: .pro, createdAt: now))
            try txn.put(AppRecord(teamID: "ZZZZZ99999", bundleID: "com.evil.app", org: "evil", policy: .production,
                                  createdAt: now))
        }
        let api = API(fixture: fixture, key: try WebhooksAPITests.API.makeKey(fixture, org: "evil"))
        let query = "app_id=" + evilApp
        let created = api.call("POST", "/api/v1/org/flags", "",
                               body: #"{"app_id":"\#(evilApp)","key":"k","type":"bool","value":false}"#)
        #expect(created.0 == 201, "\(created)")

        let foreignKey = Base64.encode(pool.flow.device.keyID)
        let unknownKey = Base64.encode([UInt8](repeating: 7, count: 32))
        func post(_ keyID: String) -> (Int, JSONValue) {
            api.call("POST", "/api/v1/org/flags/k/overrides", query,
                     body: #"{"device_key_id":"\#(keyID)","forced_value":true}"#)
        }
        let (status, body) = post(foreignKey)
        let (unknownStatus, unknownBody) = post(unknownKey)
        #expect(status == 404 && unknownStatus == 404)
        #expect(!body.jsonText.contains(victim.deviceID),
                "another organization's deviceId in the answer: \(body.jsonText)")
        let reasons = "\(body["reason"] ?? .null) vs \(unknownBody["reason"] ?? .null)"
        #expect(body["reason"] == unknownBody["reason"],
                "a foreign keyId reads differently from an unknown one: \(reasons)")

        // DELETE names the key id in the query, %-encoded.
        func delete(_ keyID: String) -> (Int, JSONValue) {
            api.call("DELETE", "/api/v1/org/flags/k/overrides", query + "&device_key_id=" + Self.escaped(keyID))
        }
        let (deleteStatus, deleted) = delete(foreignKey)
        let (_, deletedUnknown) = delete(unknownKey)
        #expect(deleteStatus == 404 && !deleted.jsonText.contains(victim.deviceID), "DELETE: \(deleted.jsonText)")
        #expect(deleted["reason"] == deletedUnknown["reason"], "DELETE: \(deleted.jsonText)")
    }

    /// `text` %-encoded for a query (everything but unreserved characters).
    static func escaped(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF")
        return text.utf8.map { b in
            let c = Character(UnicodeScalar(b))
            return c.isASCII && (c.isLetter || c.isNumber || "-._~".contains(c)) ? String(c)
                : "%" + String(hex[Int(b >> 4)]) + String(hex[Int(b & 15)])
        }.joined()
    }

    /// POST takes the subject in the JSON body (any text); DELETE names it in the query, which
    /// is %-decoded strictly. Before, the query refused "+" and every %-escape, so "qa+1" (and
    /// a base64 keyId with "+") could be set through the API and never removed through it.
    @Test func anOverrideTheAPISetsTheAPICanRemove() throws {
        let api = try API()
        #expect(api.call("POST", "/api/v1/org/flags", "",
                         body: #"{"app_id":"\#(Fixture.appID)","key":"k","type":"bool","value":false}"#).0 == 201)
        let set = api.call("POST", "/api/v1/org/flags/k/overrides",
                           body: #"{"sdk_device_id":"qa+1","forced_value":true}"#)
        #expect(set.0 == 201, "\(set)")
        let plain = api.call("DELETE", "/api/v1/org/flags/k/overrides", "app_id=\(Fixture.appID)&sdk_device_id=qa+1")
        let escaped = api.call("DELETE", "/api/v1/org/flags/k/overrides",
                               "app_id=\(Fixture.appID)&sdk_device_id=qa%2B1")
        #expect(plain.0 == 200 || escaped.0 == 200, "neither form removes it: \(plain.0) \(escaped.0) \(escaped.1)")
        #expect(plain.0 == 400 && "\(plain.1["reason"] ?? .null)".contains("%2B"), "a bare + is ambiguous: \(plain)")
        #expect(escaped.0 == 200, "\(escaped)")
        for bad in ["qa%2", "qa%zz1", "%FF"] {
            let r = api.call("DELETE", "/api/v1/org/flags/k/overrides", "app_id=\(Fixture.appID)&sdk_device_id=" + bad)
            #expect(r.0 == 400 && r.1["code"] == "bad_request", "\(bad): \(r)")
        }
    }

    /// A keyId whose base64 has "+" and "/" (about half of all keyIds have a "+"): set by the
    /// body, removed by the %-encoded query.
    @Test func anOverrideOnAKeyIDWithPlusAndSlashIsRemovedThroughTheQuery() throws {
        let api = try API()
        let keyID = [0xFB, 0xFF, 0xBF] + [UInt8](repeating: 1, count: 29)
        let text = Base64.encode(keyID)
        #expect(text.contains("+") && text.contains("/"), "\(text)")
        try api.fixture.context.store.write([.durable]) { txn in
            try txn.put(DeviceRecord(keyID: keyID, deviceID: "d-plus", appID: Fixture.appID, publicKey: [4],
                                     environment: .production, createdAt: api.fixture.clock.now()))
        }
        #expect(api.call("POST", "/api/v1/org/flags", "",
                         body: #"{"app_id":"\#(Fixture.appID)","key":"k","type":"bool","value":false}"#).0 == 201)
        let set = api.call("POST", "/api/v1/org/flags/k/overrides",
                           body: #"{"device_key_id":"\#(text)","forced_value":true}"#)
        #expect(set.0 == 201 && set.1["subject"] == "device:d-plus", "\(set)")
        let removed = api.call("DELETE", "/api/v1/org/flags/k/overrides",
                               "app_id=\(Fixture.appID)&device_key_id=" + Self.escaped(text))
        #expect(removed.0 == 200, "\(removed)")
        let left = api.call("GET", "/api/v1/org/flags/k/overrides")
        #expect(left.1["overrides"]?.arrayValue?.isEmpty == true, "\(left)")
    }

    @Test func tierLimitsAreForbiddenNamingTheLimit() throws {
        let free = try API(tier: .free)
        let post = { (api: API, body: String) in
            api.call("POST", "/api/v1/org/flags", "", body: #"{"app_id":"\#(Fixture.appID)",\#(body)}"#)
        }
        let (intStatus, intBody) = post(free, #""key":"n","type":"int","value":2"#)
        #expect(intStatus == 403 && intBody["reason"]?.stringValue?.contains("on/off") == true)
        for i in 0..<10 { #expect(post(free, #""key":"f\#(i)","type":"bool","value":true"#).0 == 201) }
        let (eleventh, body) = post(free, #""key":"f10","type":"bool","value":true"#)
        #expect(eleventh == 403 && body["limit"] == 10 && body["current"] == 10)
        #expect(body["reason"] == "The free tier allows 10 flags per app; this would make 11.")
        let rule = #"{"conditions":[{"attribute":"riskScore","operator":"lte","value":20}],"value":true}"#
        #expect(free.call("POST", "/api/v1/org/flags/f0/rules", body: rule).0 == 403)
        #expect(free.call("PUT", "/api/v1/org/flags/f0/rollout", body: #"{"percentage":5,"value":true}"#).0 == 403)
        #expect(free.call("PUT", "/api/v1/org/flags/f0/rollout", body: #"{"percentage":0}"#).0 == 200,
                "removing a rollout is allowed on every tier (after a downgrade)")
        let pro = try API(tier: .pro)
        #expect(post(pro, #""key":"b","type":"bool","value":true"#).0 == 201)
        for _ in 0..<5 { #expect(pro.call("POST", "/api/v1/org/flags/b/rules", body: rule).0 == 201) }
        let (sixth, refusal) = pro.call("POST", "/api/v1/org/flags/b/rules", body: rule)
        #expect(sixth == 403
                && refusal["reason"] == "The pro tier allows 5 targeting rules per flag; this would make 6.")
        for name in ["staging", "qa"] {
            #expect(pro.call("POST", "/api/v1/org/flag-environments", body: #"{"name":"\#(name)"}"#).0 == 201)
        }
        #expect(pro.call("POST", "/api/v1/org/flag-environments", body: #"{"name":"dev"}"#).0 == 403)
        // With flags, rules and an override stored, store check recounts what the admin kept.
        #expect(pro.call("POST", "/api/v1/org/flags/b/overrides", body: #"{"sdk_device_id":"q","forced_value":true}"#).0
                == 201)
        for api in [pro, free] {
            let report = try api.fixture.context.store.check()
            #expect(report.isConsistent, "\(report.crossProblems) \(report.databases.flatMap(\.problems))")
        }
    }

    /// The org API's writes are durable writes: one organization gets
    /// `flags.writesPerOrganizationPerMinute`, then 429 with Retry-After; reads are not charged.
    @Test func apiWritesAreRateLimitedPerOrganization() throws {
        let api = try API(writesPerMinute: 3)
        for name in ["a", "b", "c"] {
            #expect(api.call("POST", "/api/v1/org/flag-environments", body: #"{"name":"\#(name)"}"#).0 != 429)
        }
        let (status, body) = api.call("POST", "/api/v1/org/flag-environments", body: #"{"name":"d"}"#)
        #expect(status == 429 && body["code"] == "rate_limited")
        #expect(api.call("GET", "/api/v1/org/flag-environments").0 == 200)
        api.fixture.clock.advance(60)
        #expect(api.call("DELETE", "/api/v1/org/flag-environments/a").0 == 200, "a new minute")
    }

    @Test func adminErrorsNameWhatIsWrong() throws {
        let api = try API()
        let post = { (body: String) in
            api.call("POST", "/api/v1/org/flags", "", body: #"{"app_id":"\#(Fixture.appID)",\#(body)}"#)
        }
        let badKey = post(#""key":"bad key","type":"bool","value":true"#).1
        #expect(badKey["reason"]?.stringValue?.contains("flag key") == true)
        #expect(post(#""key":"k","type":"float","value":1"#).0 == 400)
        #expect(post(#""key":"k","type":"bool","value":true,"environment":"qa""#).0 == 404)
        #expect(post(#""key":"k","type":"bool","value":true"#).0 == 201)
        #expect(post(#""key":"k","type":"bool","value":true"#).0 == 409)
        #expect(api.call("PUT", "/api/v1/org/flags/k", body: #"{"value":"yes"}"#).0 == 400)
        #expect(api.call("DELETE", "/api/v1/org/flags/k/rules/3").0 == 404)
        let nobody = #"{"device_id":"nobody","forced_value":true}"#
        #expect(api.call("POST", "/api/v1/org/flags/k/overrides", body: nobody).0 == 404)
        let past = #"{"sdk_device_id":"x","forced_value":true,"expires_at":"2020-01-01T00:00:00Z"}"#
        #expect(api.call("POST", "/api/v1/org/flags/k/overrides", body: past).0 == 400)
        #expect(api.call("DELETE", "/api/v1/org/flag-environments/production").0 == 400)
        #expect(api.call("POST", "/api/v1/org/release-notes", "",
                         body: #"{"app_id":"\#(Fixture.appID)","version":"two","title":"x"}"#).0 == 400)
    }
}
