@testable import AttestConfig
import AttestCore
@testable import AttestOperations
@testable import AttestService
import AttestStore
import AttestTesting
import Foundation
import Testing

/// Tokens of different tenants (issue 37 item 11): every organization's tokens share one
/// issuer and signing key, so `aud` is what keeps one team's app's tokens from being accepted
/// for another team's app with the same bundle ID.
@Suite struct TokenAudienceTests {
    /// Team B registers an app with team A's bundle ID in its own organization and enrolls a
    /// device; the token it gets must not carry A's audience.
    @Test func anotherTeamsAppWithTheSameBundleIDDoesNotGetThisAppsAudience() throws {
        let flow = try DeviceFlow(configure: { $0.tokenAudience = .appId })
        let tokenA = try #require(try flow.enroll()["token"]?.stringValue)
        try flow.context.store.write { txn in
            try txn.put(OrgRecord(name: "globex", tier: .pro, createdAt: flow.fixture.clock.now()))
            try txn.put(AppRecord(teamID: "EVILTEAM99", bundleID: Fixture.bundleID, org: "globex",
                                  createdAt: flow.fixture.clock.now()))
        }
        let headersB = ["X-Bundle-ID": Fixture.bundleID, "X-Team-ID": "EVILTEAM99"]
        let challenge = try flow.fixture.challenge(headers: headersB)
        let (status, answer) = flow.post(.validate, try flow.validateBody(challenge: challenge,
                                                                          device: try SoftwareDevice.generate(),
                                                                          teamID: "EVILTEAM99"),
                                         headers: headersB)
        #expect(status == 200, "\(answer.jsonText)")
        let a = try JWT(compact: tokenA).claims
        let claimsB = try DeviceFlow.claims(answer)
        #expect(a["aud"]?.stringValue == Fixture.teamID + "." + Fixture.bundleID)
        #expect(claimsB["aud"]?.stringValue == "EVILTEAM99." + Fixture.bundleID)
        #expect(claimsB["aud"] != a["aud"], "a relying party of team A that checks aud refuses team B's token")
        #expect(claimsB["bundle_id"]?.stringValue == Fixture.bundleID
                    && claimsB["team_id"]?.stringValue == "EVILTEAM99", "both kept")
    }

    /// `bundle` (a config.json written before the key existed): the hosted service's form.
    /// A heartbeat judges `team_id` and `bundle_id`, so the tokens of either form keep
    /// heartbeating when the operator flips the setting (they are in the field until they
    /// expire).
    @Test func theBundleFormIsTheBundleIDAloneAndHeartbeatsAcceptBothForms() throws {
        let flow = try DeviceFlow(configure: { $0.tokenAudience = .bundle })
        let old = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(try JWT(compact: old).claims["aud"]?.stringValue == Fixture.bundleID)
        var flipped = flow.context.configuration
        flipped.tokenAudience = .appId
        let after = try ServiceContext(configuration: flipped, store: flow.context.store, clock: flow.fixture.clock,
                                       random: SystemRandom(), challengeSecret: flow.fixture.data.challengeSecret(),
                                       trustAnchors: [flow.pki.rootCertificate], testRoots: [],
                                       keyRing: KeyRing(flow.fixture.data))
        var headers = Fixture.appHeaders
        headers["Authorization"] = "Bearer " + old
        let request = Fixture.request("POST", HeartbeatEndpoint.path, body: HeartbeatStandingTests.body,
                                      headers: headers, remote: "127.0.0.1")
        #expect(Endpoint.mad.handle(request, after).status == 200, "a bundle-form token after the flip")
        let new = try #require(try DeviceFlow(configure: { $0.tokenAudience = .appId }).enroll()["token"]?.stringValue)
        #expect(try JWT(compact: new).claims["aud"]?.stringValue == Fixture.appID)
    }

    /// An appId-form token heartbeats (its `aud` is not the bundle ID the headers name).
    @Test func anAppIDFormTokenHeartbeats() throws {
        let flow = try DeviceFlow(configure: { $0.tokenAudience = .appId })
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        var headers = Fixture.appHeaders
        headers["Authorization"] = "Bearer " + token
        #expect(flow.fixture.call(.mad, body: HeartbeatStandingTests.body, headers: headers).0 == 200)
    }

    @Test func aConfigWithoutTheKeyMeansBundleAndANewDataDirectoryGetsAppID() throws {
        #expect(try Configuration(jsonText: "{}").tokenAudience == .bundle,
                "an upgraded data directory keeps its audience")
        var template = Array("/tmp/attest-audience-test-XXXXXX".utf8CString)
        let root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = DataDirectory(root + "/data")
        try data.initialise(now: Timestamp(iso8601: "2026-06-01T00:00:00Z")!)
        #expect(try data.loadConfiguration().tokenAudience == .appId, "attestctl init's config.json")
        #expect(throws: Configuration.Problem.self) { try Configuration(jsonText: #"{"tokens":{"audience":"team"}}"#) }
    }
}
