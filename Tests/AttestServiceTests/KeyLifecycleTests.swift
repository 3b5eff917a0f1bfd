@testable import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
import AttestTesting
import Testing

/// Issue #7, JWKS lifecycle, through the endpoints with the fixture's clock: a rotated-in key is
/// in jwks.json `tokens.publicationDelaySeconds` before it signs; a retired key loses its
/// private key when it stops signing and leaves jwks.json when its overlap ends, applied by
/// the workers themselves; and what `attestctl keys list` shows is what is served.
@Suite struct KeyLifecycleTests {
    static let delay: Int64 = 600, overlap: Int64 = 3600

    static func flow() throws -> DeviceFlow {
        try DeviceFlow { $0.publicationDelaySeconds = Int(delay); $0.rotationOverlapSeconds = Int(overlap) }
    }

    /// The kid of a token issued now (a fresh device enrolls).
    static func tokenKid(_ flow: DeviceFlow) throws -> String {
        flow.device = try SoftwareDevice.generate()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        return try #require(try JWT(compact: token).header["kid"]?.stringValue)
    }

    /// Moves the clock to `t` and sends one request, as any relying party's traffic would.
    static func request(_ flow: DeviceFlow, at t: Timestamp) throws {
        flow.fixture.clock.set(t)
        _ = try flow.fixture.challenge()
    }

    static func rotate(_ flow: DeviceFlow, now: Bool = false) throws -> KeyEntry {
        // A separate key ring, as `attestctl keys rotate` is a separate process.
        try KeyRing(flow.fixture.data).rotate(algorithm: "ES256", now: flow.fixture.clock.now(),
                                              publicationDelay: now ? 0 : delay, overlap: overlap)
    }

    @Test func aRotatedInKeyIsPublishedForTheDelayBeforeItSigns() throws {
        let flow = try Self.flow()
        let old = try Self.tokenKid(flow)
        let t0 = flow.fixture.clock.now()
        let new = try Self.rotate(flow)
        #expect(try KeyRingTests.served(flow.fixture) == [new.kid, old], "published at once")
        flow.fixture.clock.set(t0 + 1)
        #expect(try Self.tokenKid(flow) == old, "a second after rotating, tokens still carry the old kid")
        flow.fixture.clock.set(t0 + Self.delay - 1)
        #expect(try Self.tokenKid(flow) == old, "until the publication delay has passed")
        flow.fixture.clock.set(t0 + Self.delay)
        #expect(try Self.tokenKid(flow) == new.kid, "then the new key signs")
    }

    @Test func aRetiredKeyLosesItsPrivateKeyThenLeavesTheJWKSAfterItsOverlap() throws {
        let flow = try Self.flow()
        let old = try #require(flow.context.keyRing.entries.first)
        let oldFile = flow.fixture.data.keysDirectory + "/" + old.file
        let t0 = flow.fixture.clock.now()
        let new = try Self.rotate(flow)
        try Self.request(flow, at: t0 + Self.delay - 1)
        #expect(FileIO.exists(oldFile), "the old key still signs, so its private key is kept")
        try Self.request(flow, at: t0 + Self.delay)
        #expect(!FileIO.exists(oldFile), "retired: its private key is deleted")
        #expect(try KeyRingTests.served(flow.fixture) == [new.kid, old.kid], "tokens it signed still verify")
        try Self.request(flow, at: t0 + Self.delay + Self.overlap - 1)
        #expect(try KeyRingTests.served(flow.fixture) == [new.kid, old.kid])
        try Self.request(flow, at: t0 + Self.delay + Self.overlap)
        #expect(try KeyRingTests.served(flow.fixture) == [new.kid],
                "a worker withdrew it from jwks.json when its overlap ended")
    }

    @Test func rotateNowSignsAtOnceAndRetiresTheSignerAtOnce() throws {
        let flow = try Self.flow()
        let old = try #require(flow.context.keyRing.entries.first)
        let t0 = flow.fixture.clock.now()
        let new = try Self.rotate(flow, now: true)
        #expect(!FileIO.exists(flow.fixture.data.keysDirectory + "/" + old.file), "the previous private key is gone")
        flow.fixture.clock.set(t0 + 1)
        #expect(try Self.tokenKid(flow) == new.kid)
        #expect(try KeyRingTests.served(flow.fixture) == [new.kid, old.kid])
    }

    @Test func theKeysListingAgreesWithTheServedJWKSAndTheTokensAtEveryStep() throws {
        let flow = try Self.flow()
        let t0 = flow.fixture.clock.now()
        var steps: [Int64] = [0, 1, Self.delay - 1, Self.delay, Self.delay + 1]
        steps += [Self.delay + Self.overlap - 1, Self.delay + Self.overlap, Self.delay + Self.overlap + 1]
        let rotations: [Int64: Bool] = [0: false, Self.delay + 1: false, Self.delay + Self.overlap - 1: true]
        for step in steps {
            try Self.request(flow, at: t0 + step)
            if let now = rotations[step] { _ = try Self.rotate(flow, now: now) }
            let kid = try Self.tokenKid(flow)
            // What `attestctl keys list --json` prints, read by another process without publishing.
            let listing = try #require(try KeyRing(flow.fixture.data).listing(at: t0 + step).arrayValue)
            let published = listing.filter { $0["published"] == true }.compactMap { $0["kid"]?.stringValue }
            let signing = listing.filter { $0["signing"] == true }.compactMap { $0["kid"]?.stringValue }
            #expect(published == (try KeyRingTests.served(flow.fixture)),
                    "t0+\(step): listed as published = served in jwks.json")
            #expect(signing == [kid], "t0+\(step): the one key listed as signing signed the token")
            for key in listing where key["privateKey"] == true {
                #expect(key["state"] != "retired" && key["state"] != "withdrawn",
                        "t0+\(step): no private key kept for \(key.jsonText)")
            }
        }
    }
}
