@testable import AttestConfig
import AttestCore
@testable import AttestOperations
@testable import AttestService
import AttestStore
import AttestTesting
import Testing

/// `server.tokenCacheEntries`: a heartbeat token's signature is checked the first time a worker
/// sees it; its expiry, app, device and key on every heartbeat.
@Suite struct VerifiedTokensTests {
    static let claims = VerifiedTokens.Claims(expires: 100, bundleID: "com.example.app", teamID: "ABCDE12345",
                                              deviceID: "0123456789abcdef00ff7e8091a2b3c4")

    static func digest(_ i: Int) -> VerifiedTokens.Digest { VerifiedTokens.Digest(token: "token-\(i)") }

    func heartbeat(_ flow: DeviceFlow, _ token: String, headers: [String: String] = Fixture.appHeaders) -> Int {
        var h = headers
        h["Authorization"] = "Bearer " + token
        return flow.fixture.call(.mad, body: #"{"sdkVersion":"2.1.0","appState":"active"}"#, headers: h).0
    }

    @Test func theSetIsBoundedAndKeepsTheTokensInUse() {
        var set = VerifiedTokens(capacity: 4)
        set.insert(Self.claims, for: Self.digest(0))
        set.insert(Self.claims, for: Self.digest(1))
        set.insert(Self.claims, for: Self.digest(2))  // half full: 0 and 1 become the previous generation
        #expect(set.count == 3)
        #expect(set.claims(for: Self.digest(0)) == Self.claims, "a hit in the previous generation moves it back")
        set.insert(Self.claims, for: Self.digest(3))  // 2 and 0 become previous; 1, unused, is dropped
        #expect(set.claims(for: Self.digest(1)) == nil)
        #expect(set.claims(for: Self.digest(0)) == Self.claims && set.claims(for: Self.digest(2)) == Self.claims)
        for i in 4..<100 {
            set.insert(Self.claims, for: Self.digest(i))
            #expect(set.count <= 4)
        }
        #expect(set.claims(for: Self.digest(99)) == Self.claims)
        set.removeAll()
        #expect(set.count == 0 && set.claims(for: Self.digest(99)) == nil)
    }

    @Test func capacitiesZeroAndOne() {
        var none = VerifiedTokens(capacity: 0)
        none.insert(Self.claims, for: Self.digest(0))
        #expect(none.count == 0 && none.claims(for: Self.digest(0)) == nil)
        var one = VerifiedTokens(capacity: 1)
        one.insert(Self.claims, for: Self.digest(0))
        one.insert(Self.claims, for: Self.digest(1))
        #expect(one.count == 1 && one.claims(for: Self.digest(1)) != nil && one.claims(for: Self.digest(0)) == nil)
    }

    @Test func onlyDeviceIDsOfOurFormAreKept() {
        var set = VerifiedTokens(capacity: 4)
        for id in ["d", "0123456789ABCDEF00FF7E8091A2B3C4", "0123456789abcdef00ff7e8091a2b3",
                   "0123456789abcdef00ff7e8091a2b3c4d5"] {
            set.insert(VerifiedTokens.Claims(expires: 1, bundleID: "b", teamID: "t", deviceID: id), for: Self.digest(0))
        }
        #expect(set.count == 0)
        set.insert(Self.claims, for: Self.digest(1))
        #expect(set.claims(for: Self.digest(1)) == Self.claims, "what went in comes out")
    }

    @Test func theDigestIsTheWholeToken() {
        #expect(VerifiedTokens.Digest(token: "a.b.c") == VerifiedTokens.Digest(token: "a.b.c"))
        #expect(VerifiedTokens.Digest(token: "a.b.c") != VerifiedTokens.Digest(token: "a.b.d"))
        #expect(VerifiedTokens.Digest(token: "a.b.c") != VerifiedTokens.Digest(token: "b.b.c"))
    }

    /// White-box: the set is what spares the check, so only a verified token may enter it.
    @Test func onlyVerifiedTokensEnterAndAnEntryIsTrustedWithoutItsSignature() throws {
        let flow = try DeviceFlow()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(heartbeat(flow, token) == 200)
        #expect(flow.context.caches.verifiedTokens.count == 1)
        #expect(heartbeat(flow, token) == 200, "the same token again, from the set")
        #expect(flow.context.caches.verifiedTokens.count == 1)

        // The same claims signed by a key the JWKS does not publish: refused, and not kept.
        let forged = try JWTSigner(key: try SigningKey.generate(.p256)).sign(try JWT(compact: token).claims)
        #expect(heartbeat(flow, forged) == 401)
        #expect(flow.context.caches.verifiedTokens.count == 1)
        var tampered = Array(token.utf8)
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == UInt8(ascii: "A")
            ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(heartbeat(flow, String(decoding: tampered, as: UTF8.self)) == 401,
                "one byte changed: another digest, checked, refused")
        #expect(flow.context.caches.verifiedTokens.count == 1)

        // Were the forged token in the set, its signature would not be looked at: hence the rule.
        let kept = flow.context.caches.verifiedTokens.claims(for: VerifiedTokens.Digest(token: token))
        let claims = try #require(kept)
        flow.context.caches.verifiedTokens.insert(claims, for: VerifiedTokens.Digest(token: forged))
        #expect(heartbeat(flow, forged) == 200)
    }

    @Test func expiryAppAndDeviceAreCheckedOnEveryHeartbeat() throws {
        let flow = try DeviceFlow()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(heartbeat(flow, token) == 200)
        // Another registered app's headers.
        try flow.context.store.write { txn in
            try txn.put(AppRecord(teamID: "OTHER12345", bundleID: "com.other", org: "acme",
                                  createdAt: flow.fixture.clock.now()))
        }
        #expect(heartbeat(flow, token, headers: ["X-Bundle-ID": "com.other", "X-Team-ID": "OTHER12345"]) == 401)
        #expect(heartbeat(flow, token) == 200)
        // Expired: one second before, then at the expiry.
        let exp = try #require(try JWT(compact: token).claims["exp"]?.intValue)
        flow.fixture.clock.set(Timestamp(seconds: exp - 1))
        #expect(heartbeat(flow, token) == 200)
        flow.fixture.clock.set(Timestamp(seconds: exp))
        #expect(heartbeat(flow, token) == 401)
        flow.fixture.clock.set(Timestamp(seconds: exp - 1))
        // Revoked.
        try flow.context.store.write { txn in
            var d = try #require(try txn.device(keyID: flow.device.keyID))
            d.status = .revoked
            try txn.put(d)
        }
        #expect(heartbeat(flow, token) == 401)
        #expect(flow.context.caches.verifiedTokens.count == 1, "all of these were answered from the set")
    }

    @Test func aKeyLeavingTheJWKSTakesItsTokensWithIt() throws {
        let flow = try DeviceFlow()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(heartbeat(flow, token) == 200)
        // `attestctl keys rotate` (another process): the old key stops signing now and leaves
        // jwks.json 60 s later, well before the token expires.
        try KeyRing(flow.fixture.data).rotate(algorithm: "ES256", now: flow.fixture.clock.now(), publicationDelay: 0,
                                              overlap: 60)
        flow.fixture.clock.advance(30)
        #expect(heartbeat(flow, token) == 200, "still published during the overlap")
        flow.fixture.clock.advance(31)
        #expect(heartbeat(flow, token) == 401)
        #expect(flow.context.caches.verifiedTokens.count == 0)
    }

    @Test func zeroChecksEverySignature() throws {
        let flow = try DeviceFlow { $0.tokenCacheEntries = 0 }
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(heartbeat(flow, token) == 200 && heartbeat(flow, token) == 200)
        #expect(flow.context.caches.verifiedTokens.count == 0)
    }
}
