import AttestCore
@testable import AttestService
import AttestStore
import Testing

@Suite struct ChallengeEndpointTests {
    @Test func shapeIsChallengeExpiresAtExpiresIn() throws {
        let f = try Fixture()
        let (status, body) = f.call(.challenge, "GET")
        #expect(status == 200)
        let challenge = try #require(body["challenge"]?.stringValue)
        #expect(challenge.count == 56, "42 bytes of base64url")
        #expect(body["expiresIn"]?.intValue == 300)
        #expect(body["expiresAt"]?.stringValue == "2026-06-01T12:05:00Z", "now + 5 minutes, no fractional seconds")
        #expect(body.objectValue?.count == 3)
    }

    @Test func ttlIsConfigurable() throws {
        let f = try Fixture(configure: { $0.challengeTTLSeconds = 60 })
        let (_, body) = f.call(.challenge, "GET")
        #expect(body["expiresIn"]?.intValue == 60)
        #expect(body["expiresAt"]?.stringValue == "2026-06-01T12:01:00Z")
    }

    @Test func eachChallengeIsDifferent() throws {
        let f = try Fixture()
        let all = try (0..<50).map { _ in try f.challenge() }
        #expect(Set(all).count == 50)
    }

    @Test func unknownAppIs403AppNotRegistered() throws {
        let f = try Fixture()
        let (status, body) = f.call(.challenge, "GET",
                                    headers: ["X-Bundle-ID": "com.other", "X-Team-ID": Fixture.teamID])
        #expect(status == 403)
        #expect(body["code"]?.stringValue == "app_not_registered")
        #expect(body["requestId"]?.stringValue == "req-1")
        #expect(body["reason"] == body["error"], "reason mirrors error for the iOS SDK")
    }

    @Test func oneAppHeaderWithoutTheOtherIs400() throws {
        let f = try Fixture()
        let (status, body) = f.call(.challenge, "GET", headers: ["X-Bundle-ID": Fixture.bundleID])
        #expect(status == 400 && body["code"]?.stringValue == "bad_request")
    }

    @Test func withoutHeadersTheChallengeIsUnboundAndRefusedByValidateAndRefresh() throws {
        let f = try Fixture()
        let challenge = try f.challenge(headers: [:])
        let token = try f.context.challenges.check(challenge, appID: "OTHER12345.x", now: f.clock.now(),
                                                   requireBinding: false)
        #expect(token.boundToApp == false)
        #expect(throws: ServiceError.self, "validate and refresh refuse unbound challenges") {
            try f.context.challenges.check(challenge, appID: Fixture.appID, now: f.clock.now())
        }
    }

    @Test func aBoundChallengeIsInvalidForAnotherApp() throws {
        let f = try Fixture()
        let challenge = try f.challenge()
        #expect(try f.context.challenges.check(challenge, appID: Fixture.appID, now: f.clock.now()).boundToApp)
        #expect(throws: ServiceError.self) {
            try f.context.challenges.check(challenge, appID: "OTHER12345.x", now: f.clock.now())
        }
    }

    @Test func aDisabledAppIsRefusedAtTheNextRequestDespiteTheLookupCache() throws {
        let f = try Fixture()
        #expect(f.call(.challenge, "GET").0 == 200, "cached now")
        try f.context.store.write { txn in
            var app = try #require(try txn.app(id: Fixture.appID))
            app.enabled = false
            try txn.put(app)
        }
        let (status, body) = f.call(.challenge, "GET")
        #expect(status == 403 && body["code"]?.stringValue == "app_not_registered")
    }

    @Test func theLastLookupAnswersOnlyTheSameHeaders() throws {
        let f = try Fixture()
        let ours = ["X-Bundle-ID": Fixture.bundleID, "X-Team-ID": Fixture.teamID]
        #expect(f.call(.challenge, "GET", headers: ours).0 == 200)
        let other = f.call(.challenge, "GET", headers: ["X-Bundle-ID": "com.other", "X-Team-ID": Fixture.teamID])
        #expect(other.0 == 403 && other.1["code"]?.stringValue == "app_not_registered", "another bundle after ours")
        let bad = f.call(.challenge, "GET",
                         headers: ["X-Bundle-ID": Fixture.bundleID, "X-Team-ID": Fixture.teamID.lowercased()])
        #expect(bad.0 == 400, "an invalid Team ID is checked, not taken from the last lookup")
        let padded = try f.challenge(headers: ["X-Bundle-ID": " \(Fixture.bundleID) ", "X-Team-ID": Fixture.teamID])
        #expect(try f.context.challenges.check(padded, appID: Fixture.appID, now: f.clock.now()).boundToApp)
        let again = try f.challenge(headers: ours)
        #expect(try f.context.challenges.check(again, appID: Fixture.appID, now: f.clock.now()).boundToApp)
        let unbound = try f.challenge(headers: [:])
        #expect(try !f.context.challenges.check(unbound, appID: Fixture.appID, now: f.clock.now(),
                                                requireBinding: false).boundToApp,
                "no headers after ours: unbound, not ours")
    }

    @Test func aClockBeyondYear9999StillAnswersJSONWithItsExpiry() throws {
        let f = try Fixture()
        f.clock.set(Timestamp(seconds: 253_402_300_700))
        let (status, body) = f.call(.challenge, "GET")
        #expect(status == 200)
        #expect(body["expiresAt"]?.stringValue == Timestamp(seconds: 253_402_301_000).iso8601)
        #expect(body["expiresIn"]?.intValue == 300 && body["challenge"]?.stringValue?.count == 56)
    }

    @Test func postIs405() throws {
        let f = try Fixture()
        #expect(f.call(.challenge, "POST").0 == 405)
    }

    @Test func issuingWritesNothingToTheStore() throws {
        let f = try Fixture()
        let before = try f.context.store.entryCounts()
        for _ in 0..<1000 { _ = try f.challenge() }
        #expect(try f.context.store.entryCounts() == before)
    }
}

@Suite struct ChallengeAuthorityTests {
    let authority = ChallengeAuthority(secret: [UInt8](repeating: 1, count: 32))
    let now = Timestamp(seconds: 1_800_000_000)
    let id = [UInt8](repeating: 9, count: 16)

    func code(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return (error as? ServiceError)?.code.rawValue ?? "\(error)" }
    }

    @Test func validUntilItsExpiryThenExpired() {
        let c = authority.issue(appID: "T.b", issued: now, expiry: now + 300, id: id)
        #expect(code { _ = try authority.check(c, appID: "T.b", now: now + 300) } == nil)
        #expect(code { _ = try authority.check(c, appID: "T.b", now: now + 301) } == "challenge_expired")
    }

    @Test func forgedOrMangledIsInvalid() {
        let c = authority.issue(appID: "T.b", issued: now, expiry: now + 300, id: id)
        var chars = Array(c)
        chars[30] = chars[30] == "A" ? "B" : "A"
        #expect(code { _ = try authority.check(String(chars), appID: "T.b", now: now) } == "challenge_invalid")
        #expect(code { _ = try authority.check("", appID: "T.b", now: now) } == "challenge_invalid")
        #expect(code { _ = try authority.check(String(c.dropLast()), appID: "T.b", now: now) } == "challenge_invalid")
        let other = ChallengeAuthority(secret: [UInt8](repeating: 2, count: 32)).issue(appID: "T.b", issued: now,
                                                                                       expiry: now + 300, id: id)
        #expect(code { _ = try authority.check(other, appID: "T.b", now: now) } == "challenge_invalid",
                "another server's key")
    }

    @Test func anExtendedExpiryBreaksTheTag() {
        let c = authority.issue(appID: "T.b", issued: now, expiry: now + 300, id: id)
        var bytes = Base64.decode(c)!
        bytes[9] &+= 1
        #expect(code { _ = try authority.check(Base64.encode(bytes, url: true), appID: "T.b", now: now) }
                    == "challenge_invalid")
        var earlier = Base64.decode(c)!
        earlier[5] &-= 1  // the issue time, moved to before a restart, is signed too
        #expect(code { _ = try authority.check(Base64.encode(earlier, url: true), appID: "T.b", now: now) }
                    == "challenge_invalid")
    }

    @Test func carriesWhenItWasIssued() throws {
        let c = authority.issue(appID: "T.b", issued: now - 7, expiry: now + 293, id: id)
        #expect(Base64.decode(c)?.first == 2 && c.utf8.count == 56)
        let token = try authority.check(c, appID: "T.b", now: now)
        #expect(token.issued == now - 7 && token.expiry == now + 293 && token.id == id && token.boundToApp)
    }

    @Test func versionOneChallengesFromOlderBuildsAreStillAccepted() throws {
        let c = authority.issueVersion1(appID: "T.b", expiry: now + 300, id: id)
        #expect(Base64.decode(c)?.first == 1 && c.utf8.count == 56)
        let token = try authority.check(c, appID: "T.b", now: now)
        #expect(token.issued == nil && token.expiry == now + 300 && token.id == id)
        #expect(code { _ = try authority.check(c, appID: "T.b", now: now + 301) } == "challenge_expired")
        #expect(code { _ = try authority.check(c, appID: "T.c", now: now) } == "challenge_invalid")
    }
}
