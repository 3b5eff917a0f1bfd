import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

/// Subject link policies (issue 37 item 6): which `subjectId` a device may link itself with.
@Suite struct SubjectLinkPolicyTests {
    /// A flow under `policy` whose organization's `house-17` holds `premium`.
    func flow(_ policy: SubjectLinkPolicy) throws -> DeviceFlow {
        let flow = try DeviceFlow(subjectLinks: policy)
        _ = try SubjectGrants.grant(org: "acme", subjectID: "house-17", entitlement: "premium", until: nil,
                                    store: flow.context.store, now: flow.fixture.clock.now())
        return flow
    }

    func signed(_ flow: DeviceFlow, _ subject: String = "house-17", ttl: Int64 = 600, secret: String? = nil) -> String {
        SignedSubject.mint(subject: subject, expiry: flow.fixture.clock.now() + ttl,
                           secret: secret ?? flow.fixture.subjectSecret)
    }

    func linked(_ flow: DeviceFlow, _ subject: String = "house-17") throws -> [[UInt8]] {
        try flow.context.store.read { try $0.subjectDevices(org: "acme", subjectID: subject) }
    }

    /// The token's subscription claim after validate with `subjectId` = `value`, and the link stored.
    func validate(_ flow: DeviceFlow, _ value: String) throws -> (JSONValue?, String?) {
        let (status, body) = try flow.attest(flow.device, [("subjectId", .string(value))])
        #expect(status == 200 && body["isValid"]?.boolValue == true,
                "a refused link never fails validate: \(body.jsonText)")
        return (try DeviceFlow.claims(body)["subscription"], try flow.storedDevice()?.subjectID)
    }

    // signed

    @Test func aValidSignedValueLinksItsSubject() throws {
        let flow = try flow(.signed)
        let (subscription, stored) = try validate(flow, signed(flow))
        #expect(subscription
                    == .object([("subject_id", "house-17"), ("entitlements", ["premium"]), ("expires_at", nil)]))
        #expect(try stored == "house-17" && linked(flow) == [flow.device.keyID],
                "the stored link is the plain subject id")
        #expect(flow.fixture.logs.allSatisfy { !$0.contains("subject link refused") })
    }

    @Test func forgedExpiredAndOtherOrganizationsValuesAreRefusedAndLoggedWithoutTheMAC() throws {
        let flow = try flow(.signed)
        let now = flow.fixture.clock.now()
        let good = signed(flow)
        let mac = String(good.split(separator: ".").last!)
        let otherSecret = SignedSubject.newSecret(random: SystemRandom())
        let hostile: [(String, String, String)] = [
            ("plain id", "house-17", "is not a signed value"),
            ("another subject under a valid MAC", good.replacingOccurrences(of: "house-17", with: "house-18"),
             "does not verify"),
            ("a later expiry under a valid MAC",
             good.replacingOccurrences(of: ".\(now.seconds + 600).", with: ".\(now.seconds + 99_999)."),
             "does not verify"),
            ("a flipped MAC character", String(good.dropLast()) + (good.last == "A" ? "B" : "A"), "does not verify"),
            ("another organization's secret", signed(flow, secret: otherSecret), "does not verify"),
            ("expired beyond the clock skew", signed(flow, ttl: -SignedSubject.clockSkew - 1), "expired at"),
            ("milliseconds instead of seconds", "v1.house-17.\(now.seconds * 1000).\(mac)", "is not a signed value"),
            ("a padded MAC", good + "=", "is not a signed value"),
        ]
        for (what, value, why) in hostile {
            flow.device = try SoftwareDevice.generate()
            flow.fixture.logs = []
            let (subscription, stored) = try validate(flow, value)
            #expect(subscription == nil && stored == "", "\(what): no subscription claim, no link")
            let line = flow.fixture.logs.first { $0.contains("subject link refused") } ?? ""
            #expect(line.contains(why), "\(what): the log says why: \(flow.fixture.logs)")
            #expect(!line.contains(value) && !line.contains(mac) && !line.contains(flow.fixture.subjectSecret),
                    "\(what): neither the value, its MAC nor the secret is logged: \(line)")
        }
        #expect(try linked(flow).isEmpty && linked(flow, "house-18").isEmpty)
        // Within the skew a backend's slow clock is forgiven.
        flow.device = try SoftwareDevice.generate()
        #expect(try validate(flow, signed(flow, ttl: -SignedSubject.clockSkew)).1 == "house-17")
    }

    @Test func aRefusedValueAtRefreshLeavesTheLinkAsItWas() throws {
        let flow = try flow(.signed)
        #expect(try validate(flow, signed(flow)).1 == "house-17")
        // The SDK may resend the value it was given: once expired it changes nothing.
        flow.fixture.clock.advance(3_600)
        let (status, body) = try flow.refresh([("subjectId", .string(signed(flow, "house-18", ttl: -3_600)))])
        #expect(try status == 200 && DeviceFlow.claims(body)["subscription"]?["subject_id"]?.stringValue == "house-17",
                "kept")
        let (_, plain) = try flow.refresh([("subjectId", "house-18")])
        #expect(try DeviceFlow.claims(plain)["subscription"]?["entitlements"] == ["premium"]
                    && flow.storedDevice()?.subjectID == "house-17")
        #expect(try linked(flow, "house-18").isEmpty)
        // The same subject, even in an expired value, is no change and not even checked.
        flow.fixture.logs = []
        #expect(try flow.refresh([("subjectId", .string(signed(flow, ttl: -3_600)))]).0 == 200)
        #expect(flow.fixture.logs.allSatisfy { !$0.contains("subject link refused") })
        // A valid value moves it; blank unlinks (a device may drop its own link).
        let (_, moved) = try flow.refresh([("subjectId", .string(signed(flow, "house-18")))])
        #expect(try DeviceFlow.claims(moved)["subscription"]?["subject_id"]?.stringValue == "house-18")
        let (_, dropped) = try flow.refresh([("subjectId", "")])
        #expect(try DeviceFlow.claims(dropped)["subscription"] == nil && flow.storedDevice()?.subjectID == "")
    }

    @Test func withoutASecretNothingLinks() throws {
        let flow = try flow(.signed)
        try flow.context.store.write { txn in
            var org = try #require(try txn.org(named: "acme"))
            org.subjectSecret = ""
            try txn.put(org)
        }
        let (subscription, stored) = try validate(flow, signed(flow))
        #expect(subscription == nil && stored == "")
        #expect(flow.fixture.logs.contains { $0.contains("has no subject secret yet") })
    }

    // operator

    @Test func operatorIgnoresEveryDeviceSentValueAndLinksThroughAttestctlOnly() throws {
        let flow = try flow(.operator)
        #expect(try validate(flow, signed(flow)) == (nil, ""), "even a valid signed value")
        #expect(flow.fixture.logs.contains { $0.contains("policy operator") })
        let device = try SubjectLinks.link(keyID: flow.device.keyID, to: "house-17", org: "acme",
                                           store: flow.context.store, now: flow.fixture.clock.now())
        #expect(try device.subjectID == "house-17" && linked(flow) == [flow.device.keyID])
        for value in ["house-18", signed(flow, "house-18"), ""] {
            let (status, body) = try flow.refresh([("subjectId", .string(value))])
            #expect(try status == 200
                        && DeviceFlow.claims(body)["subscription"]?["subject_id"]?.stringValue == "house-17",
                    "\(value) ignored")
        }
        _ = try SubjectLinks.link(keyID: flow.device.keyID, to: "", org: "acme", store: flow.context.store,
                                  now: flow.fixture.clock.now())
        #expect(try DeviceFlow.claims(try flow.refresh().1)["subscription"] == nil && linked(flow).isEmpty,
                "attestctl unlinks")
        #expect(throws: ServiceError.self, "a device of another organization's app is not this one's to link") {
            try SubjectLinks.link(keyID: flow.device.keyID, to: "house-17", org: "other-org", store: flow.context.store,
                                  now: flow.fixture.clock.now())
        }
    }

    // asserted

    @Test func assertedKeepsTodaysBehaviourAndChecksSignedValues() throws {
        let flow = try flow(.asserted)
        let (subscription, stored) = try validate(flow, "house-17")
        #expect(subscription?["entitlements"] == ["premium"] && stored == "house-17",
                "any device links to any id it sends")
        let (_, moved) = try flow.refresh([("subjectId", .string(signed(flow, "house-18")))])
        #expect(try DeviceFlow.claims(moved)["subscription"]?["subject_id"]?.stringValue == "house-18",
                "a signed value links its subject")
        let (_, forged) = try flow.refresh([("subjectId", .string(signed(flow, "house-19", secret: "asl_wrong")))])
        #expect(try DeviceFlow.claims(forged)["subscription"]?["subject_id"]?.stringValue == "house-18",
                "a forged one is refused")
    }

    // The format, and the documented code that makes it.

    @Test func theFormatIsReadFromTheRight() throws {
        let mac = String(repeating: "A", count: 43)
        let dotted = try #require(SignedSubject("v1.a.b@example.com.1767225600.\(mac)"))
        #expect(dotted.subject == "a.b@example.com" && dotted.expiry.seconds == 1_767_225_600)
        for bad in ["v1..1.\(mac)", "v1.x.1", "v2.x.1.\(mac)", "v1.x..\(mac)", "v1.x.-1.\(mac)",
                    "v1.x.12345678901.\(mac)", "v1.x y.1.\(mac)", "v1.x/y.1.\(mac)", "v1.x.1.\(mac)A",
                    "v1.x.1.\(mac.dropLast())+", "v1.\(String(repeating: "x", count: 65)).1.\(mac)",
                    "v1.hé.1.\(mac)"] {
            #expect(SignedSubject(bad) == nil, "\(bad)")
        }
        #expect(SignedSubject("v1.\(String(repeating: "x", count: 64)).9999999999.\(mac)") != nil,
                "64 bytes and 10 digits fit")
    }

    /// docs/tokens.md's Python and Node functions, run as written, with their value fed to validate.
    @Test(arguments: ["python", "js"])
    func theDocumentedMintingCodeMakesValuesTheServiceLinks(_ language: String) throws {
        guard let interpreter = Self.interpreter(language == "python" ? "python3" : "node") else {
            #expect(language == "js", "python3 is needed for this test"); return
        }
        let code = try #require(Self.documentedBlock(language),
                                "docs/tokens.md has a ```\(language) block under Subjects and entitlements")
        let flow = try flow(.signed)
        let call = language == "python" ? "\nimport os\nprint(signed_subject(\"house-17\", os.environ[\"SECRET\"]))\n"
                                        : "\nconsole.log(signedSubject(\"house-17\", process.env.SECRET));\n"
        let value = try Self.run(interpreter, code + call, secret: flow.fixture.subjectSecret)
        // The documented code uses the real clock: the fixture's must be within its TTL.
        flow.fixture.clock.set(Timestamp(seconds: Int64(Date().timeIntervalSince1970)))
        let (subscription, stored) = try validate(flow, value)
        #expect(stored == "house-17" && subscription?["entitlements"] == ["premium"], "\(language): \(value)")
    }

    static func interpreter(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The first fenced block in `language` of docs/tokens.md's "Subjects and entitlements".
    static func documentedBlock(_ language: String) -> String? {
        guard let doc = try? DocumentationTests.document("docs/tokens.md"),
              let section = doc.range(of: "## Subjects and entitlements"),
              let open = doc.range(of: "```\(language)\n", range: section.upperBound..<doc.endIndex),
              let close = doc.range(of: "\n```", range: open.upperBound..<doc.endIndex) else { return nil }
        return String(doc[open.upperBound..<close.lowerBound])
    }

    static func run(_ interpreter: String, _ code: String, secret: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: interpreter)
        process.arguments = interpreter.hasSuffix("node") ? ["-e", code] : ["-c", code]
        process.environment = ProcessInfo.processInfo.environment.merging(["SECRET": secret]) { $1 }
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError("\(interpreter) exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
