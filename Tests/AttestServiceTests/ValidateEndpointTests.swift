@testable import AttestConfig
import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

/// What the shipping iOS SDK declares (grantiva/ios-sdk, Sources/Grantiva/Network/NetworkModels.swift),
/// mirrored field for field: a response these cannot decode breaks the SDK.
struct SDKAttestationResponse: Decodable {
    let isValid: Bool
    let token: String
    let expiresAt: String
    let deviceIntelligence: SDKDeviceIntelligence
    let customClaims: [String: String]
}

struct SDKDeviceIntelligence: Decodable {
    let deviceId: String
    let riskScore: Int?
    let riskCategory: String
    let deviceIntegrity: String
    let jailbreakDetected: Bool
    let attestationCount: Int
    let lastAttestationDate: String?
}

struct SDKRefreshResponse: Decodable {
    let token: String
    let expiresAt: String
}

struct SDKErrorResponse: Decodable {
    let reason: String
}

struct SDKChallengeResponse: Decodable {
    let challenge: String
    let expiresAt: String
}

/// The SDK parses dates with a default ISO8601DateFormatter, which rejects fractional seconds.
func sdkDate(_ text: String) -> Date? { ISO8601DateFormatter().date(from: text) }

@Suite struct ValidateEndpointTests {
    @Test func successDecodesAsTheSDKDeclaresIt() throws {
        let flow = try DeviceFlow()
        let response = Fixture.request("POST", Endpoint.validate.path,
                                       body: try flow.validateBody(challenge: try flow.fixture.challenge()).jsonText,
                                       headers: Fixture.appHeaders)
        let raw = Endpoint.validate.handle(response, flow.context)
        #expect(raw.status == 200)
        let decoded = try JSONDecoder().decode(SDKAttestationResponse.self, from: Data(raw.body))
        #expect(decoded.isValid)
        #expect(sdkDate(decoded.expiresAt) != nil, "expiresAt parses with ISO8601DateFormatter: \(decoded.expiresAt)")
        #expect(decoded.expiresAt == "2026-06-01T13:00:00Z", "one hour by default")
        #expect(sdkDate(try #require(decoded.deviceIntelligence.lastAttestationDate)) != nil)
        #expect(decoded.deviceIntelligence.riskCategory == "trusted")
        #expect(decoded.deviceIntelligence.riskScore == 0, "pro tier shows the score")
        #expect(decoded.deviceIntelligence.attestationCount == 1)
        #expect(decoded.deviceIntelligence.deviceId == DeviceIdentity.deviceID(keyID: flow.device.keyID))
        let challenge = try JSONDecoder().decode(SDKChallengeResponse.self, from: Data(Endpoint.challenge.handle(
            Fixture.request("GET", Endpoint.challenge.path, headers: Fixture.appHeaders), flow.context).body))
        #expect(sdkDate(challenge.expiresAt) != nil)
    }

    @Test func riskScoreIsNullOnTheFreeTier() throws {
        let flow = try DeviceFlow(tier: .free)
        let body = try flow.enroll()
        #expect(body["deviceIntelligence"]?["riskScore"]?.isNull == true)
        #expect(body["deviceIntelligence"]?["riskCategory"]?.stringValue == "trusted")
        let claims = try JWT(compact: try #require(body["token"]?.stringValue)).claims
        #expect(claims["risk_score"]?.isNull == true)
    }

    @Test func theDeviceIsStoredWithKeyCounterReceiptAndMetadata() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let device = try #require(try flow.storedDevice())
        #expect(device.publicKey == flow.device.publicKey)
        #expect(device.counter == 0 && device.status == .active && device.environment == .production)
        #expect(device.metadata.deviceModel == "iPhone15,2" && device.metadata.appBuildNumber == "42"
                    && device.metadata.platform == "iOS")
        #expect(try flow.context.store.read { try $0.receipt(keyID: flow.device.keyID) }?.isEmpty == false)
        #expect(device.bundleVersion == "1.0" && device.validationCategory == 1)
    }

    @Test func theTokenCarriesTheSpecClaimsAndVerifiesWithTheJWKS() throws {
        let flow = try DeviceFlow()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        let jwt = try JWT(compact: token)
        #expect(jwt.header["alg"]?.stringValue == "ES256")
        let jwks = try JSONParser.parse(try #require(try FileIO.read(flow.fixture.data.jwksFile)))
        let jwk = try #require(jwks["keys"]?.arrayValue?.first { $0["kid"] == jwt.header["kid"] })
        let point = [UInt8(4)] + Base64.decode(jwk["x"]!.stringValue!)! + Base64.decode(jwk["y"]!.stringValue!)!
        #expect(jwt.hasValidES256Signature(try ECPublicKey(x962Point: point)))
        let c = jwt.claims
        for name in ["iss", "aud", "sub", "device_id", "iat", "exp", "jti", "team_id", "bundle_id", "environment",
                     "risk_score", "risk_category", "device_integrity", "jailbreak_detected", "attestation_count",
                     "attest", "device_model", "os_version", "app_version", "platform", "custom_claims"] {
            #expect(c[name] != nil, "claim \(name)")
        }
        #expect(c["aud"]?.stringValue == Fixture.bundleID && c["attest"]?.stringValue == "hardware")
        #expect((c["exp"]?.intValue ?? 0) - (c["iat"]?.intValue ?? 0) == 3600)
    }

    @Test func customClaimsAreFlattenedInTheResponseAndStructuredInTheToken() throws {
        let flow = try DeviceFlow(tier: .pro)
        try flow.context.store.write { txn in
            var app = try #require(try txn.app(id: Fixture.appID))
            app.customClaimsJSON = #"[{"type":"static","key":"user_tier","value":"premium"},"#
                + #"{"type":"static","key":"limits","value":{"seats":3}},"#
                + #"{"type":"conditional","key":"beta","property":"environment","equals":"production","value":true}]"#
            try txn.put(app)
        }
        let body = try flow.enroll()
        #expect(body["customClaims"]?["user_tier"]?.stringValue == "premium")
        #expect(body["customClaims"]?["limits"]?.stringValue == #"{"seats":3}"#)
        #expect(body["customClaims"]?["beta"]?.stringValue == "true")
        let claims = try JWT(compact: body["token"]!.stringValue!).claims["custom_claims"]
        #expect(claims?["limits"]?["seats"]?.intValue == 3)
        #expect(claims?["beta"]?.boolValue == true)
    }

    // MARK: Error codes, in docs/contract.md §2 order.

    func expectError(_ flow: DeviceFlow, _ body: JSONValue, status: Int, code: String,
                     headers: [String: String] = Fixture.appHeaders,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let (s, b) = flow.post(.validate, body, headers: headers)
        #expect(s == status, "status for \(code)", sourceLocation: sourceLocation)
        #expect(b["code"]?.stringValue == code, "code: \(b.jsonText)", sourceLocation: sourceLocation)
        #expect(b["reason"]?.stringValue?.isEmpty == false, "reason for the SDK", sourceLocation: sourceLocation)
        #expect(b["requestId"]?.stringValue == "req-1", sourceLocation: sourceLocation)
    }

    @Test func unknownAppIs403() throws {
        let flow = try DeviceFlow()
        expectError(flow, try flow.validateBody(challenge: try flow.fixture.challenge()), status: 403,
                    code: "app_not_registered", headers: ["X-Bundle-ID": "com.unknown", "X-Team-ID": Fixture.teamID])
    }

    @Test func bodyAppMustEqualTheHeaders() throws {
        let flow = try DeviceFlow()
        var body = try flow.validateBody(challenge: try flow.fixture.challenge())
        body = .object(body.objectValue!.map { $0.0 == "bundleId" ? ($0.0, "com.other") : $0 })
        expectError(flow, body, status: 400, code: "bad_request")
    }

    @Test func nonJSONIs400BadRequest() throws {
        let flow = try DeviceFlow()
        let (s, b) = flow.fixture.call(.validate, body: "not json")
        #expect(s == 400 && b["code"]?.stringValue == "bad_request")
    }

    @Test func keyIDMustBe32BytesOfBase64() throws {
        let flow = try DeviceFlow()
        for bad in ["%%%", Base64.encode([1, 2, 3])] {
            let body = try flow.validateBody(challenge: try flow.fixture.challenge(), extra: [])
            expectError(flow, .object(body.objectValue!.map { $0.0 == "keyId" ? ($0.0, .string(bad)) : $0 }),
                        status: 400, code: "key_id_invalid")
        }
    }

    @Test func attestationObjectMustBeBase64CBOR() throws {
        let flow = try DeviceFlow()
        // Not base64; base64 of bytes that are not CBOR (0xFF is a break with nothing to end); CBOR that is not a map.
        for bad in ["!!!", Base64.encode([0xFF, 0x00]), Base64.encode(Array("not cbor at all".utf8))] {
            let body = try flow.validateBody(challenge: try flow.fixture.challenge())
            expectError(flow,
                        .object(body.objectValue!.map { $0.0 == "attestationObject" ? ($0.0, .string(bad)) : $0 }),
                        status: 400, code: "attestation_object_invalid")
        }
    }

    @Test func clientDataHashMustBeTheChallengesHash() throws {
        let flow = try DeviceFlow()
        let body = try flow.validateBody(challenge: try flow.fixture.challenge())
        expectError(flow, .object(body.objectValue!.map {
                        $0.0 == "clientDataHash" ? ($0.0, .string(Base64.encode(SHA256.hash([1])))) : $0
                    }),
                    status: 400, code: "client_data_hash_invalid")
    }

    @Test func forgedOrOtherAppChallengesAreInvalid() throws {
        let flow = try DeviceFlow()
        let other = ChallengeAuthority(secret: [UInt8](repeating: 7, count: 32))
            .issue(appID: Fixture.appID, issued: flow.fixture.clock.now(), expiry: flow.fixture.clock.now() + 300,
                   id: [UInt8](repeating: 1, count: 16))
        expectError(flow, try flow.validateBody(challenge: other), status: 400, code: "challenge_invalid")
        let forAnotherApp = flow.context.challenges.issue(appID: "OTHER12345.app", issued: flow.fixture.clock.now(),
                                                          expiry: flow.fixture.clock.now() + 300,
                                                         id: [UInt8](repeating: 2, count: 16))
        expectError(flow, try flow.validateBody(challenge: forAnotherApp), status: 400, code: "challenge_invalid")
    }

    @Test func expiredChallengesAreRefused() throws {
        let flow = try DeviceFlow()
        let challenge = try flow.fixture.challenge()
        flow.fixture.clock.advance(301)
        expectError(flow, try flow.validateBody(challenge: challenge), status: 400, code: "challenge_expired")
    }

    @Test func aReplayedChallengeIsAlreadyUsed() throws {
        let flow = try DeviceFlow()
        let challenge = try flow.fixture.challenge()
        #expect(flow.post(.validate, try flow.validateBody(challenge: challenge)).0 == 200)
        expectError(flow, try flow.validateBody(challenge: challenge, device: try SoftwareDevice.generate()),
                    status: 400, code: "challenge_already_used")
    }

    @Test func aTamperedAttestationIs401AndStillConsumesTheChallenge() throws {
        let flow = try DeviceFlow()
        let challenge = try flow.fixture.challenge()
        // Flip a bit in the authData's counter bytes: still CBOR, but the nonce no longer matches.
        let body = try flow.validateBody(challenge: challenge) { object in object[object.count - 80] ^= 0x01 }
        expectError(flow, body, status: 401, code: "apple_validation_failed")
        #expect(flow.fixture.logs.contains { $0.contains("step") },
                "the log names the failing step: \(flow.fixture.logs)")
        expectError(flow, try flow.validateBody(challenge: challenge), status: 400, code: "challenge_already_used")
        #expect(try flow.storedDevice() == nil)
    }

    @Test func anUntrustedCAIs401() throws {
        let flow = try DeviceFlow()
        let stranger = try TestPKI.generate(validFrom: Timestamp(iso8601: "2026-01-01T00:00:00Z")!,
                                            validUntil: Timestamp(iso8601: "2027-01-01T00:00:00Z")!)
        let challenge = try flow.fixture.challenge()
        let cdh = SHA256.hash(challenge.utf8)
        let (keyID, object) = try flow.device.attest(clientDataHash: cdh, appID: Fixture.appID, pki: stranger,
                                                     at: flow.fixture.clock.now())
        let body: JSONValue = .object([("challenge", .string(challenge)), ("keyId", .string(Base64.encode(keyID))),
                                       ("attestationObject", .string(Base64.encode(object))),
                                       ("clientDataHash", .string(Base64.encode(cdh))),
                                       ("bundleId", .string(Fixture.bundleID)), ("teamId", .string(Fixture.teamID))])
        expectError(flow, body, status: 401, code: "apple_validation_failed")
    }

    @Test func aDevelopmentKeyIsRefusedByAProductionApp() throws {
        let flow = try DeviceFlow(policy: .production)
        expectError(flow, try flow.validateBody(challenge: try flow.fixture.challenge(), environment: .development),
                    status: 401, code: "apple_validation_failed")
        let both = try DeviceFlow(policy: .both)
        #expect(both.post(.validate, try both.validateBody(challenge: try both.fixture.challenge(),
                                                           environment: .development)).0 == 200)
    }

    @Test func anAlreadyAttestedKeyIsRefused() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        expectError(flow, try flow.validateBody(challenge: try flow.fixture.challenge()), status: 401,
                    code: "apple_validation_failed")
    }

    @Test func blankOptionalFieldsCountAsAbsent() throws {
        let flow = try DeviceFlow()
        let (status, _) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                                   extra: [("deviceFingerprint", "  "),
                                                                           ("subjectId", "")]))
        #expect(status == 200)
        let device = try #require(try flow.storedDevice())
        #expect(device.fingerprint.isEmpty && device.subjectID.isEmpty)
    }

    @Test func keyChurnPerFingerprintRaisesTheRiskScore() throws {
        let flow = try DeviceFlow()
        var scores = [Int64]()
        for _ in 0..<3 {
            flow.fixture.clock.advance(7_200)  // apart enough not to be a burst (RiskModelTests)
            let d = try SoftwareDevice.generate()
            let (status, body) = flow.post(.validate,
                                           try flow.validateBody(challenge: try flow.fixture.challenge(), device: d,
                                                                         extra: [("deviceFingerprint", "fp-1")]))
            #expect(status == 200)
            scores.append(body["deviceIntelligence"]?["riskScore"]?.intValue ?? -1)
            #expect(body["deviceIntelligence"]?["attestationCount"]?.intValue == Int64(scores.count))
        }
        #expect(scores == [0, 15, 30], "+15 per extra key on one fingerprint")
    }

    /// What's New reads `device_versions`: the lineage's first app version stays, its latest
    /// rises with each attestation of a higher version and a lower one does not lower it.
    @Test func validateKeepsTheLineagesFirstAndLatestAppVersions() throws {
        let flow = try DeviceFlow()
        let lineage = LineageKey.fingerprint("fp-v", appID: Fixture.appID)
        let start = flow.fixture.clock.now()
        var seen = [DeviceVersionsRecord?]()
        for version in ["2.1.0", "2.10.0", "2.9.0", ""] {
            flow.fixture.clock.advance(7_200)
            let extra: [(String, JSONValue)] = [("deviceFingerprint", "fp-v")]
            let body = try flow.validateBody(challenge: try flow.fixture.challenge(),
                                             device: try SoftwareDevice.generate(), appVersion: version, extra: extra)
            #expect(flow.post(.validate, body).0 == 200, "\(version)")
            seen.append(try flow.context.store.read { try $0.deviceVersions(lineage: lineage) })
        }
        let first = DeviceVersionsRecord(first: "2.1.0", firstAt: start + 7_200, latest: "2.1.0",
                                         latestAt: start + 7_200)
        let raised = DeviceVersionsRecord(first: "2.1.0", firstAt: start + 7_200, latest: "2.10.0",
                                          latestAt: start + 14_400)
        #expect(seen == [first, raised, raised, raised], "2.10 is above 2.9; a lower or no version changes nothing")
        // A device without a fingerprint is its own lineage.
        try flow.enroll()
        let alone = try #require(try flow.storedDevice())
        #expect(try flow.context.store.read { try $0.deviceVersions(lineage: .of(alone)) }?.first == "2.1.0")
    }

    @Test func oversizedBodiesAre413AndOtherMethods405() throws {
        let flow = try DeviceFlow(configure: { $0.bodyLimitBytes = 2_048 })
        var request = Fixture.request("POST", Endpoint.validate.path, headers: Fixture.appHeaders)
        request.bodyTooLarge = true
        let response = Endpoint.validate.handle(request, flow.context)
        #expect(response.status == 413)
        let body = try JSONParser.parse(response.body)
        #expect(body["code"]?.stringValue == "payload_too_large")
        #expect(body["hint"]?.stringValue == "Bodies are limited to 2048 bytes (server.bodyLimitBytes).",
                "the configured limit, not a fixed one")
        #expect(flow.fixture.call(.validate, "GET").0 == 405)
    }

    @Test func theOrganizationBucketIsSharedAndAnswers429WithHeaders() throws {
        let flow = try DeviceFlow(rate: 3)
        try flow.enroll()
        for _ in 0..<2 {
            #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        }
        let request = Fixture.request("POST", Endpoint.refresh.path,
                                      body: try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText,
                                      headers: Fixture.appHeaders)
        let response = Endpoint.refresh.handle(request, flow.context)
        #expect(response.status == 429)
        let headers = Dictionary(uniqueKeysWithValues: response.headers.map { ($0.name, $0.value) })
        #expect(headers["X-RateLimit-Limit"] == "3" && headers["X-RateLimit-Remaining"] == "0")
        #expect(Int(headers["Retry-After"] ?? "") ?? 0 > 0 && headers["X-RateLimit-Reset"] != nil)
        #expect((try JSONParser.parse(response.body))["code"]?.stringValue == "rate_limited")
        flow.fixture.clock.advance(60)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200,
                "a new window")
    }

    @Test func thePerIPLimitAppliesToValidateOnly() throws {
        let flow = try DeviceFlow(configure: { $0.validatePerIPPerMinute = 2 })
        for _ in 0..<2 {
            #expect(flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                               device: try SoftwareDevice.generate())).0 == 200)
        }
        expectError(flow, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                device: try SoftwareDevice.generate()),
                    status: 429, code: "rate_limited")
    }
}
