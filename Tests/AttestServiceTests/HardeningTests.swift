@testable import AttestConfig
import AttestCore
@testable import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

/// The security review's findings (issue #7), one test each, in-process.
@Suite struct HardeningTests {
    static let outsider = "203.0.113.9"

    func send(_ flow: DeviceFlow, _ endpoint: Endpoint, _ body: String, headers: [String: String] = Fixture.appHeaders,
              remote: String = "127.0.0.1") -> (Int, JSONValue, [String: String]) {
        let response = endpoint.handle(Fixture.request("POST", endpoint.path, body: body, headers: headers,
                                                       remote: remote), flow.context)
        let headers = Dictionary(response.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        return (response.status, (try? JSONParser.parse(response.body)) ?? .null, headers)
    }

    /// `body` with `field` set to `value` (replaced in place, or appended).
    func replacing(_ body: JSONValue, _ field: String, _ value: JSONValue) -> JSONValue {
        let members = body.objectValue ?? []
        if members.contains(where: { $0.0 == field }) {
            return .object(members.map { $0.0 == field ? (field, value) : $0 })
        }
        return .object(members + [(field, value)])
    }

    func code(_ result: (Int, JSONValue)) -> String { "\(result.0) \(result.1["code"]?.stringValue ?? "-")" }

    func addOtherApp(_ flow: DeviceFlow, org: String = "acme") throws -> [String: String] {
        try flow.context.store.write { txn in
            if try txn.org(named: org) == nil {
                try txn.put(OrgRecord(name: org, tier: .pro, createdAt: flow.fixture.clock.now()))
            }
            try txn.put(AppRecord(teamID: "OTHER12345", bundleID: "com.other", org: org,
                                  createdAt: flow.fixture.clock.now()))
        }
        return ["X-Bundle-ID": "com.other", "X-Team-ID": "OTHER12345"]
    }

    // 1. Organization lockout.

    @Test func junkFromAnOutsiderChargesOnlyItsOwnIPAndNeverTheOrganization() throws {
        let flow = try DeviceFlow(rate: 5, configure: { $0.refreshPerIPPerMinute = 3 })
        try flow.enroll()
        var seen = [String]()
        for _ in 0..<20 {
            seen.append(code(flow.fixture.call(.refresh, body: "{}", headers: Fixture.appHeaders,
                                               remote: Self.outsider)))
        }
        #expect(seen.prefix(3).allSatisfy { $0 == "400 bad_request" }
                    && seen.dropFirst(3).allSatisfy { $0 == "429 rate_limited" }, "\(seen)")
        // The organization's bucket (5 a minute) was never charged: the genuine device refreshes.
        for i in 0..<3 {
            #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200,
                    "refresh \(i)")
        }
    }

    @Test func forgedChallengesChargeTheIPButNotTheOrganization() throws {
        let flow = try DeviceFlow(rate: 3, configure: { $0.refreshPerIPPerMinute = 1000 })
        try flow.enroll()  // the first of the organization's 3
        let forged = try flow.refreshBody(challenge: String(repeating: "A", count: 56))
        for _ in 0..<10 { _ = send(flow, .refresh, forged.jsonText, remote: Self.outsider) }
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        let (status, body, headers) = send(flow, .refresh,
                                           try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText)
        #expect(status == 429 && body["code"]?.stringValue == "rate_limited",
                "authentic requests share the organization's bucket")
        #expect(headers["X-RateLimit-Limit"] == "3" && headers["Retry-After"] != nil)
    }

    @Test func refreshHasAPerIPLimitOnByDefault() throws {
        #expect(Configuration().refreshPerIPPerMinute > 0)
        let flow = try DeviceFlow(configure: { $0.refreshPerIPPerMinute = 2 })
        try flow.enroll()
        for _ in 0..<2 {
            #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        }
        let (status, _, headers) = send(flow, .refresh,
                                        try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText)
        #expect(status == 429 && headers["X-RateLimit-Limit"] == "2")
        #expect(send(flow, .refresh, try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText,
                     remote: "10.1.1.1").0 == 200,
                "another IP is not limited")
    }

    @Test func anIPv6ClientHasOneBucketPerSlash64() throws {
        #expect(IPAddress.rateLimitKey("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(IPAddress.rateLimitKey("2001:db8:1:2:ffff:1:2:3") == "2001:db8:1:2::/64")
        #expect(IPAddress.rateLimitKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(IPAddress.rateLimitKey("192.0.2.7") == "192.0.2.7")
        #expect(IPAddress.rateLimitKey("unix:") == "unix:")
        let flow = try DeviceFlow(rate: 5, configure: { $0.refreshPerIPPerMinute = 3 })
        try flow.enroll()
        var seen = [String]()
        for i in 0..<6 {
            seen.append(code(flow.fixture.call(.refresh, body: "{}", headers: Fixture.appHeaders,
                                               remote: "2001:db8:7:7:\(i + 1)::\(i)")))
        }
        #expect(seen.prefix(3).allSatisfy { $0 == "400 bad_request" }
                    && seen.dropFirst(3).allSatisfy { $0 == "429 rate_limited" },
                "six addresses of one /64 share its bucket of 3: \(seen)")
        #expect(code(flow.fixture.call(.refresh, body: "{}", headers: Fixture.appHeaders,
                                       remote: "2001:db8:7:8::1")) == "400 bad_request",
                "the next /64 has a bucket of its own")
    }

    // 2. A keyId alone must not invalidate a device.

    @Test func aForgedAssertionForAKnownKeyChangesNothing() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let before = try #require(try flow.storedDevice())
        let challenge = try flow.fixture.challenge()
        let cdh = SHA256.hash(challenge.utf8)
        let forged = try SoftwareDevice.generate().assertion(clientDataHash: cdh, appID: Fixture.appID, counter: 1000)
        let body: JSONValue = ["keyId": .string(Base64.encode(flow.device.keyID)),
                               "assertion": .string(Base64.encode(forged)),
                               "clientDataHash": .string(Base64.encode(cdh)), "challenge": .string(challenge)]
        #expect(code(flow.post(.refresh, body)) == "409 reattest_required")
        #expect(try flow.storedDevice() == before, "status, counter and failedAssertions unchanged")
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200,
                "the device keeps refreshing")
    }

    @Test func junkCBORUnderAnotherRegisteredAppsHeadersChangesNothing() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let before = try #require(try flow.storedDevice())
        let other = try addOtherApp(flow)
        let challenge = try flow.fixture.challenge(headers: other)
        let cdh = SHA256.hash(challenge.utf8)
        let junk = CBORWriter.encode(.map([CBORMapEntry(key: .text("signature"),
                                                        value: .bytes([0x30, 0x06, 2, 1, 1, 2, 1, 1][...])),
                                           CBORMapEntry(key: .text("authenticatorData"),
                                                        value: .bytes([UInt8](repeating: 0, count: 37)[...]))]))
        let body: JSONValue = ["keyId": .string(Base64.encode(flow.device.keyID)),
                               "assertion": .string(Base64.encode(junk)), "clientDataHash": .string(Base64.encode(cdh)),
                               "challenge": .string(challenge)]
        #expect(code(flow.post(.refresh, body, headers: other)) == "409 reattest_required")
        #expect(try flow.storedDevice() == before)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
    }

    @Test func anotherOrganizationsKeyIdIsUnknownAndNothingIsQueuedOrChanged() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        try flow.context.store.write([.durable]) { txn in
            for (sequence, _) in try txn.outbox() { try txn.dequeue(sequence) }
        }
        let before = try #require(try flow.storedDevice())
        let beta = try addOtherApp(flow, org: "beta")
        func junk(_ headers: [String: String]) throws -> JSONValue {
            let challenge = try flow.fixture.challenge(headers: headers)
            let cbor = CBORWriter.encode(.map([CBORMapEntry(key: .text("signature"),
                                                            value: .bytes([0x30, 0x06, 2, 1, 1, 2, 1, 1][...])),
                                               CBORMapEntry(key: .text("authenticatorData"),
                                                            value: .bytes([UInt8](repeating: 0, count: 37)[...]))]))
            return ["keyId": .string(Base64.encode(flow.device.keyID)), "assertion": .string(Base64.encode(cbor)),
                    "clientDataHash": .string(Base64.encode(SHA256.hash(challenge.utf8))),
                    "challenge": .string(challenge)]
        }
        #expect(code(flow.post(.refresh, try junk(beta), headers: beta)) == "404 not_found",
                "acme's key is unknown to beta's app")
        #expect(try flow.context.store.read { try $0.outbox() }.isEmpty, "no anomaly event for beta (or acme)")
        #expect(try flow.storedDevice() == before)
        try flow.context.store.write([.durable]) { txn in
            var device = try #require(try txn.device(keyID: flow.device.keyID))
            device.status = .revoked
            try txn.put(device)
        }
        #expect(code(flow.post(.refresh, try junk(beta), headers: beta)) == "404 not_found",
                "its state does not show either")
        #expect(code(flow.post(.refresh, try junk(Fixture.appHeaders))) == "403 forbidden",
                "its own app still sees it revoked")
    }

    @Test func aGenuinelySignedReplayStillInvalidates() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)).0 == 200)
        #expect(code(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)))
                    == "409 reattest_required")
        let device = try #require(try flow.storedDevice())
        #expect(device.status == .invalidated && device.failedAssertions == 1)
    }

    // 3. Fingerprints are scoped to the app and bounded.

    @Test func anotherTenantsFingerprintChurnDoesNotTouchThisApp() throws {
        let flow = try DeviceFlow()
        let other = try addOtherApp(flow, org: "beta")
        for _ in 0..<3 {
            let body = try flow.validateBody(challenge: try flow.fixture.challenge(headers: other),
                                             device: try SoftwareDevice.generate(), teamID: "OTHER12345",
                                             bundleID: "com.other", extra: [("deviceFingerprint", "shared-fp")])
            #expect(flow.post(.validate, body, headers: other).0 == 200)
        }
        let (status, body) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                                      extra: [("deviceFingerprint", "shared-fp")]))
        #expect(status == 200)
        #expect(body["deviceIntelligence"]?["attestationCount"]?.intValue == 1,
                "org beta's three keys are not counted here")
        #expect(body["deviceIntelligence"]?["riskScore"]?.intValue == 0)
    }

    @Test func aFingerprintPastItsLimitIs400NotAStoreError() throws {
        let flow = try DeviceFlow()
        for length in [129, 600, 5000] {
            let challenge = try flow.fixture.challenge()
            let body = try flow.validateBody(
                challenge: challenge, extra: [("deviceFingerprint", .string(String(repeating: "f", count: length)))])
            let (status, reply) = flow.post(.validate, body)
            #expect(status == 400 && reply["code"]?.stringValue == "bad_request", "\(length) bytes")
            #expect(reply["error"]?.stringValue?.contains("deviceFingerprint") == true)
        }
        let ok = try flow.validateBody(challenge: try flow.fixture.challenge(),
                                       extra: [("deviceFingerprint", .string(String(repeating: "f", count: 128)))])
        #expect(flow.post(.validate, ok).0 == 200)
    }

    // 4. Every authentic presentation consumes the challenge.

    @Test func fieldsOfTheWrongTypeAreRefusedBeforeTheChallengeIsLookedAt() throws {
        let flow = try DeviceFlow()
        let forged = String(repeating: "A", count: 56)
        for (field, value) in [("deviceModel", JSONValue.int(1)), ("subjectId", .int(7)), ("platform", .bool(true))] {
            let body = replacing(try flow.validateBody(challenge: forged), field, value)
            let (status, reply) = flow.post(.validate, body)
            #expect(status == 400 && reply["code"]?.stringValue == "bad_request", "\(field): \(reply.jsonText)")
            #expect(reply["error"]?.stringValue?.contains(field) == true)
        }
        try flow.enroll()
        var refresh = try flow.refreshBody(challenge: forged)
        refresh = .object(refresh.objectValue! + [("subjectId", .int(7))])
        #expect(code(flow.post(.refresh, refresh)) == "400 bad_request")
    }

    @Test func everyFailureAfterTheChallengeLeavesItConsumed() throws {
        let flow = try DeviceFlow()
        func reuse(_ body: JSONValue, _ endpoint: Endpoint = .validate) -> String { code(flow.post(endpoint, body)) }
        // Apple's verification fails.
        let c1 = try flow.fixture.challenge()
        #expect(reuse(try flow.validateBody(challenge: c1, tamper: { $0[$0.count - 80] ^= 0x01 }))
                    == "401 apple_validation_failed")
        #expect(reuse(try flow.validateBody(challenge: c1)) == "400 challenge_already_used")
        // A keyId already attested.
        try flow.enroll()
        let c2 = try flow.fixture.challenge()
        #expect(reuse(try flow.validateBody(challenge: c2)) == "401 apple_validation_failed")
        #expect(reuse(try flow.validateBody(challenge: c2, device: try SoftwareDevice.generate()))
                    == "400 challenge_already_used")
        // Refresh: an unknown key, then a revoked one.
        let c3 = try flow.fixture.challenge()
        let stranger = DeviceFlow.refreshBody(for: try SoftwareDevice.generate(), challenge: c3)
        #expect(reuse(stranger, .refresh) == "404 not_found")
        #expect(reuse(try flow.refreshBody(challenge: c3), .refresh) == "400 challenge_already_used")
    }

    @Test(.enabled(if: !Fixture.onPostgres, "LMDB only"))
    func aStoreErrorAfterTheChallengeDoesNotLeaveItReusable() throws {
        let flow = try DeviceFlow()
        // Fill the durable environment (16 MiB in the fixture) until LMDB refuses even small records.
        var i = 0
        for size in [60_000, 4_000, 100] {
            var full = false
            while !full {
                i += 1
                do {
                    _ = try flow.context.store.write([.durable]) { txn in
                        try txn.put(.receipts, Array("filler-\(i)".utf8), [UInt8](repeating: 7, count: size))
                    }
                } catch { full = true }
            }
        }
        let challenge = try flow.fixture.challenge()
        let body = try flow.validateBody(challenge: challenge)
        #expect(code(flow.post(.validate, body)) == "503 unavailable")
        #expect(code(flow.post(.validate, body)) == "400 challenge_already_used")
    }

    // 5. Unbound challenges.

    @Test func aChallengeFetchedWithoutAppHeadersIsRefused() throws {
        let flow = try DeviceFlow()
        let unbound = try flow.fixture.challenge(headers: [:])
        #expect(code(flow.post(.validate, try flow.validateBody(challenge: unbound))) == "400 challenge_invalid")
        try flow.enroll()
        #expect(code(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(headers: [:]))))
                    == "400 challenge_invalid")
    }

    // 6. The wall clock stepping back.

    @Test func aUsedChallengeStaysUsedWhenTheClockStepsBackWithinTheMargin() throws {
        let flow = try DeviceFlow(configure: { $0.challengeUsedRetentionSeconds = 600 })
        let start = flow.fixture.clock.now()
        let challenge = try flow.fixture.challenge()
        try flow.enroll()
        #expect(flow.post(.validate,
                          try flow.validateBody(challenge: challenge, device: try SoftwareDevice.generate())).0 == 200)
        // Past the challenge's expiry (300 s) but within the margin: a sweep runs and keeps it.
        flow.fixture.clock.advance(300 + 500)
        for _ in 0..<RateLimits.sweepInterval {
            #expect(flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                               device: try SoftwareDevice.generate())).0 == 200)
        }
        flow.fixture.clock.set(start)
        #expect(code(flow.post(.validate, try flow.validateBody(challenge: challenge,
                                                                device: try SoftwareDevice.generate())))
                    == "400 challenge_already_used")
        // Past expiry plus margin the entry is swept (a clock stepping back further is out of scope).
        let token = try flow.context.challenges.check(challenge, appID: Fixture.appID, now: start)
        let key = (id: token.id, expiry: token.expiry.seconds + 600)
        #expect(try flow.context.store.read { try $0.isChallengeUsed(id: key.id, expiry: key.expiry) })
        flow.fixture.clock.set(start + 300 + 601)
        for _ in 0..<RateLimits.sweepInterval {
            _ = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                           device: try SoftwareDevice.generate()))
        }
        #expect(try flow.context.store.read { try $0.isChallengeUsed(id: key.id, expiry: key.expiry) } == false,
                "swept after the margin, within one sweep interval of device requests")
    }

    // 7. Policy changes reach existing keys.

    @Test func aDevelopmentKeyStopsRefreshingWhenTheAppBecomesProductionOnly() throws {
        let flow = try DeviceFlow(policy: .both)
        let (status, _) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                                     environment: .development))
        #expect(status == 200)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        try flow.context.store.write { txn in
            var app = try #require(try txn.app(id: Fixture.appID))
            app.policy = .production
            try txn.put(app)
        }
        #expect(code(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())))
                    == "403 forbidden")
        #expect(try flow.storedDevice()?.status == .active,
                "a policy refusal does not invalidate: loosening the policy again restores the device")
    }

    // 12. Test-root devices are labelled as such.

    @Test func aDeviceVerifiedThroughATestRootSaysSoInItsToken() throws {
        let flow = try DeviceFlow(pkiAsTestRoot: true)
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(try JWT(compact: token).claims["attest"]?.stringValue == "test_root")
        #expect(try flow.storedDevice()?.anchor == .testRoot)
        let (_, refreshed) = flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge()))
        #expect(try JWT(compact: try #require(refreshed["token"]?.stringValue)).claims["attest"]?.stringValue
                    == "test_root")
        let hardware = try DeviceFlow()
        let hardwareToken = try #require(try hardware.enroll()["token"]?.stringValue)
        #expect(try JWT(compact: hardwareToken).claims["attest"]?.stringValue == "hardware")
    }

    @Test func aTestRootIntermediateSeenBeforeSkipsApplesFailingChainBuild() throws {
        let flow = try DeviceFlow(pkiAsTestRoot: true)
        _ = try flow.enroll()
        let apple = flow.context.attestationVerifier.chainVerifier
        let firstAttempts = apple.openSSLChecks
        #expect(firstAttempts == 1, "the first test-root chain is tried against Apple's root first")
        for _ in 0..<3 {
            let other = try SoftwareDevice.generate()
            let (status, _) = flow.post(.validate,
                                        try flow.validateBody(challenge: try flow.fixture.challenge(), device: other))
            #expect(status == 200)
        }
        #expect(apple.openSSLChecks == firstAttempts,
                "later ones go straight to the test root that verified the intermediate")
        #expect(flow.context.testRootVerifier!.chainVerifier.directLeafChecks == 3)
        // A hardware chain is still Apple's: the sample's intermediate is not the test root's.
        let sample = try AttestationObject(cborEncoded: AppleSample.attestationObject[...])
        #expect(flow.context.testRootVerifier!.chainVerifier.hasVerified(intermediateDER: sample.x5c[1],
                                                                         at: AppleSample.verifyAt) == false)
    }

    // 13. What the shipping SDK does with our answers.

    @Test func unknownKeysCanAnswer409SoTheSDKReattests() throws {
        let flow = try DeviceFlow(configure: { $0.unknownKeyStatus = 409 })
        #expect(code(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())))
                    == "409 reattest_required")
        #expect(Configuration().unknownKeyStatus == 404, "the contract's 404 stays the default")
    }

    // 17. Unbounded and ambiguous inputs.

    @Test func aMemberSentTwiceIsRefused() throws {
        let flow = try DeviceFlow()
        let body = try flow.validateBody(challenge: try flow.fixture.challenge(), extra: [("deviceModel", "Pixel")])
        let (status, reply) = flow.post(.validate, body)
        #expect(status == 400 && reply["error"]?.stringValue?.contains("deviceModel") == true, "\(reply.jsonText)")
    }

    @Test func malformedAppHeadersAre400() throws {
        let flow = try DeviceFlow()
        try flow.context.store.write { txn in
            try txn.put(AppRecord(teamID: "ABCDE12345", bundleID: "com.x.y", org: "acme",
                                  createdAt: flow.fixture.clock.now()))
        }
        // "ABCDE12345.com" + "x.y" would spell the App ID of "ABCDE12345" + "com.x.y".
        for headers in [["X-Team-ID": "ABCDE12345.com", "X-Bundle-ID": "x.y"],
                        ["X-Team-ID": "abcde12345", "X-Bundle-ID": "com.x.y"],
                        ["X-Team-ID": "ABCDE12345", "X-Bundle-ID": "com.x.y/evil"],
                        ["X-Team-ID": "ABCDE12345", "X-Bundle-ID": String(repeating: "a", count: 156)]] {
            let (status, body) = flow.fixture.call(.challenge, "GET", headers: headers)
            #expect(status == 400 && body["code"]?.stringValue == "bad_request", "\(headers)")
        }
        #expect(flow.fixture.call(.challenge, "GET", headers: ["X-Team-ID": "ABCDE12345", "X-Bundle-ID": "com.x.y"]).0
                    == 200)
    }

    @Test func everyStoredTextFieldHasALimitNamedInThe400() throws {
        let flow = try DeviceFlow()
        for (field, limit) in [("deviceModel", 64), ("osVersion", 64), ("appVersion", 64), ("appBuildNumber", 64),
                               ("platform", 64), ("deviceFingerprint", 128), ("subjectId", 128)] {
            let body = replacing(try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                       device: try SoftwareDevice.generate()),
                                 field, .string(String(repeating: "x", count: limit + 1)))
            let (status, reply) = flow.post(.validate, body)
            #expect(status == 400 && reply["error"]?.stringValue?.contains(field) == true,
                    "\(field): \(reply.jsonText)")
            let atLimit = replacing(try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                          device: try SoftwareDevice.generate()),
                                    field, .string(String(repeating: "x", count: limit)))
            #expect(flow.post(.validate, atLimit).0 == 200, "\(field) at \(limit) bytes")
        }
    }

    @Test func anOversizedReceiptIsRefused() throws {
        let flow = try DeviceFlow()
        let big = try flow.validateBody(challenge: try flow.fixture.challenge(),
                                        receipt: [UInt8](repeating: 0x30, count: 16_385))
        let (status, reply) = flow.post(.validate, big)
        #expect(status == 400 && reply["code"]?.stringValue == "attestation_object_invalid")
        #expect(try flow.context.store.read { try $0.count(.devices) } == 0)
        let fits = try flow.validateBody(challenge: try flow.fixture.challenge(),
                                         receipt: [UInt8](repeating: 0x30, count: 16_384))
        #expect(flow.post(.validate, fits).0 == 200)
    }
}
