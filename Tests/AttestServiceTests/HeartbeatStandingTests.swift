import AttestCore
@testable import AttestService
import AttestStore
import AttestTesting
import Testing

/// A heartbeat speaks for a device only while the device is in good standing (issue 37 item 7):
/// its token still verifies after the device is invalidated or blocked, for up to
/// `tokens.lifetimeSeconds`, so the heartbeat must judge the stored device, not the token.
/// Each test plays the device's holder, who keeps sending the token it got before.
@Suite struct HeartbeatStandingTests {
    static let body = #"{"sdkVersion":"2.1.0","appState":"active"}"#

    func heartbeat(_ flow: DeviceFlow, _ token: String) -> (Int, JSONValue) {
        var headers = Fixture.appHeaders
        headers["Authorization"] = "Bearer " + token
        return flow.fixture.call(.mad, body: Self.body, headers: headers)
    }

    /// Devices counted active on `day` (2026-06-DD).
    func activeOn(_ flow: DeviceFlow, day: Int) throws -> UInt32 {
        let report = try flow.context.store.read { try $0.usageMonthReport(org: "acme", month: "2026-06") }
        guard let days = report?.days, days.count >= day else { return 0 }
        return days[day - 1].activeDevices
    }

    @Test func aDeviceInvalidatedByAReplayedCounterIs401AndNotCounted() throws {
        let flow = try DeviceFlow()
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-01T23:40:00Z")!)
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)).0 == 200)
        // The same counter again (a cloned key replaying): the device is invalidated.
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)).0 == 409)
        #expect(try flow.storedDevice()?.status == .invalidated)
        flow.fixture.clock.advance(1800)  // the next day, the first token still unexpired
        let (status, body) = heartbeat(flow, token)
        #expect(status == 401 && body["code"]?.stringValue == "unauthorized", "\(status) \(body.jsonText)")
        #expect(try activeOn(flow, day: 2) == 0, "the refused heartbeat counted nothing")
    }

    @Test func aBlockedDeviceIs401UntilTheBlockIsCleared() throws {
        let flow = try DeviceFlow()
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-01T23:40:00Z")!)
        let token = try #require(try flow.attest(flow.device,
                                                 [("deviceFingerprint", "phone-1")]).1["token"]?.stringValue)
        #expect(heartbeat(flow, token).0 == 200)
        _ = try flow.flag(.block, reason: "chargeback fraud")
        flow.fixture.clock.advance(1800)
        #expect(heartbeat(flow, token).0 == 401, "blocked by an operator")
        #expect(try activeOn(flow, day: 2) == 0)
        _ = try flow.flag(.clear, reason: "false positive")
        #expect(heartbeat(flow, token).0 == 200, "cleared: the same token works again")
        #expect(try activeOn(flow, day: 2) == 1)
    }

    /// The operator blocks the device's NEW key (the one it re-attested with); the old key's
    /// token, still unexpired, is refused too: the block is the lineage's, every key of the
    /// fingerprint carries it.
    @Test func aBlockOfAnotherKeyOfTheSameFingerprintRefusesThisKeysToken() throws {
        let flow = try DeviceFlow()
        let old = flow.device
        let oldToken = try #require(try flow.attest(old, [("deviceFingerprint", "phone-1")]).1["token"]?.stringValue)
        let new = try SoftwareDevice.generate()
        #expect(try flow.attest(new, [("deviceFingerprint", "phone-1")]).0 == 200)
        #expect(heartbeat(flow, oldToken).0 == 200)
        _ = try flow.flag(.block, new.keyID, reason: "fraud on the new key")
        #expect(heartbeat(flow, oldToken).0 == 401)
        // Another fingerprint of the same app is another device: not blocked.
        let other = try SoftwareDevice.generate()
        let otherToken = try #require(try flow.attest(other,
                                                      [("deviceFingerprint", "phone-2")]).1["token"]?.stringValue)
        #expect(heartbeat(flow, otherToken).0 == 200)
    }
}
