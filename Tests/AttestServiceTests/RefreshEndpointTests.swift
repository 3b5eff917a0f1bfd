import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

@Suite struct RefreshEndpointTests {
    func expectError(_ flow: DeviceFlow, _ body: JSONValue, status: Int, code: String,
                     headers: [String: String] = Fixture.appHeaders,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let (s, b) = flow.post(.refresh, body, headers: headers)
        #expect(s == status, "status for \(code): \(b.jsonText)", sourceLocation: sourceLocation)
        #expect(b["code"]?.stringValue == code, "code", sourceLocation: sourceLocation)
        #expect(b["reason"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
    }

    @Test func threeRefreshesAdvanceTheCounterAndDecodeAsTheSDKDeclares() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        for expected in UInt32(1)...3 {
            let request = Fixture.request("POST", Endpoint.refresh.path,
                                          body: try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText,
                                          headers: Fixture.appHeaders)
            let response = Endpoint.refresh.handle(request, flow.context)
            #expect(response.status == 200)
            let decoded = try JSONDecoder().decode(SDKRefreshResponse.self, from: Data(response.body))
            #expect(sdkDate(decoded.expiresAt) != nil)
            #expect(try JWT(compact: decoded.token).claims["device_id"]?.stringValue
                        == DeviceIdentity.deviceID(keyID: flow.device.keyID))
            #expect(try flow.storedDevice()?.counter == expected)
        }
    }

    @Test func aReplayedCounterIs409AndInvalidatesUntilReattested() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)).0 == 200)
        expectError(flow, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5), status: 409,
                    code: "reattest_required")
        #expect(try flow.storedDevice()?.status == .invalidated)
        #expect(try flow.storedDevice()?.counter == 5, "the successful refresh's counter stays")
        // Even a correct, higher counter now fails: the device must attest a new key.
        expectError(flow, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 6), status: 409,
                    code: "reattest_required")
        flow.device = try SoftwareDevice.generate()
        try flow.enroll()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200,
                "a re-enrolled key works")
    }

    @Test func aReplayedChallengeIsAlreadyUsed() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let challenge = try flow.fixture.challenge()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: challenge)).0 == 200)
        expectError(flow, try flow.refreshBody(challenge: challenge), status: 400, code: "challenge_already_used")
        #expect(try flow.storedDevice()?.status == .active, "a replayed challenge does not invalidate")
    }

    @Test func anUnknownKeyIs404() throws {
        let flow = try DeviceFlow()
        expectError(flow, try flow.refreshBody(challenge: try flow.fixture.challenge()), status: 404, code: "not_found")
    }

    @Test func aRevokedKeyIs403() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        try flow.context.store.write { txn in
            var d = try #require(try txn.device(keyID: flow.device.keyID))
            d.status = .revoked
            try txn.put(d)
        }
        expectError(flow, try flow.refreshBody(challenge: try flow.fixture.challenge()), status: 403, code: "forbidden")
    }

    @Test func anotherAppsKeyIs409() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        try flow.context.store.write { txn in
            try txn.put(AppRecord(teamID: "OTHER12345", bundleID: "com.other", org: "acme",
                                  createdAt: flow.fixture.clock.now()))
        }
        let headers = ["X-Bundle-ID": "com.other", "X-Team-ID": "OTHER12345"]
        let challenge = try flow.fixture.challenge(headers: headers)
        expectError(flow, try flow.refreshBody(challenge: challenge), status: 409, code: "reattest_required",
                    headers: headers)
        #expect(try flow.storedDevice()?.status == .invalidated)
    }

    @Test func aBadSignatureIs409() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let impostor = try SoftwareDevice.generate()
        let challenge = try flow.fixture.challenge()
        let cdh = SHA256.hash(challenge.utf8)
        let assertion = try impostor.assertion(clientDataHash: cdh, appID: Fixture.appID, counter: 1)
        let body: JSONValue = ["keyId": .string(Base64.encode(flow.device.keyID)),
                               "assertion": .string(Base64.encode(assertion)),
                               "clientDataHash": .string(Base64.encode(cdh)), "challenge": .string(challenge)]
        expectError(flow, body, status: 409, code: "reattest_required")
        let device = try flow.storedDevice()
        #expect(device?.failedAssertions == 0 && device?.status == .active, "a forged assertion changes nothing stored")
    }

    @Test func anAssertionForAnotherChallengeIs409() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let signedFor = try flow.refreshBody(challenge: try flow.fixture.challenge())
        let fresh = try flow.fixture.challenge()
        let body: JSONValue = .object(signedFor.objectValue!.map { k, v in
            k == "challenge" ? (k, .string(fresh))
                : k == "clientDataHash" ? (k, .string(Base64.encode(SHA256.hash(fresh.utf8)))) : (k, v)
        })
        expectError(flow, body, status: 409, code: "reattest_required")
    }

    @Test func missingFieldsAndBadBase64Are400() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let good = try flow.refreshBody(challenge: try flow.fixture.challenge())
        for field in ["keyId", "assertion", "clientDataHash", "challenge"] {
            expectError(flow, .object(good.objectValue!.filter { $0.0 != field }), status: 400, code: "bad_request")
        }
        for field in ["keyId", "assertion", "clientDataHash"] {
            expectError(flow, .object(good.objectValue!.map { $0.0 == field ? ($0.0, "@@not base64@@") : $0 }),
                        status: 400, code: "bad_request")
        }
    }

    @Test func anAssertionThatIsNotCBORIs400AndDoesNotInvalidate() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let good = try flow.refreshBody(challenge: try flow.fixture.challenge())
        expectError(flow, .object(good.objectValue!.map {
                        $0.0 == "assertion" ? ($0.0, .string(Base64.encode([0xFF]))) : $0
                    }),
                    status: 400, code: "bad_request")
        #expect(try flow.storedDevice()?.status == .active)
    }

    @Test func clientDataHashMustBeTheChallengesHash() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let good = try flow.refreshBody(challenge: try flow.fixture.challenge())
        expectError(flow, .object(good.objectValue!.map {
                        $0.0 == "clientDataHash" ? ($0.0, .string(Base64.encode(SHA256.hash([9])))) : $0
                    }),
                    status: 400, code: "client_data_hash_invalid")
    }

    @Test func subjectIDIsKeptWhenOmittedAndReplacedWhenSent() throws {
        let flow = try DeviceFlow()
        let (status, _) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                                     extra: [("subjectId", "house-1")]))
        #expect(status == 200)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        #expect(try flow.storedDevice()?.subjectID == "house-1")
        var body = try flow.refreshBody(challenge: try flow.fixture.challenge())
        body = .object(body.objectValue! + [("subjectId", "house-2")])
        #expect(flow.post(.refresh, body).0 == 200)
        #expect(try flow.storedDevice()?.subjectID == "house-2")
    }

    /// Besides the device and the challenge, a refresh adds one to its organization's count of
    /// the day (`activity_days`: a new key only when its transaction drew a shard not yet used).
    @Test func refreshWritesOnlyTheDeviceAndTheChallenge() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let before = try flow.context.store.entryCounts()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        var after = try flow.context.store.entryCounts()
        #expect(after[.challenges] == (before[.challenges] ?? 0) + 1)
        after[.challenges] = before[.challenges]
        after[.rates] = before[.rates]
        #expect((before[.activityDays] ?? 0)...(before[.activityDays] ?? 0) + 1 ~= after[.activityDays] ?? 0)
        after[.activityDays] = before[.activityDays]
        #expect(after == before)
    }
}
