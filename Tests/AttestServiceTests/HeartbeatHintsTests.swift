import AttestCore
@testable import AttestService
import Testing

/// `HeartbeatHints`: what a device's last heartbeat read, kept per worker in fixed-size
/// entries, bounded, and only where the store prefetches.
@Suite struct HeartbeatHintsTests {
    static func id(_ i: Int) -> String { Hex.encode(SHA256.hash(Array("device-\(i)".utf8)).prefix(16)) }

    @Test func aHintComesBackAsItWasKeptAndTheTableIsBounded() {
        var hints = HeartbeatHints()
        let keyID = SHA256.hash(Array("key".utf8)), identity = Array(SHA256.hash(Array("id".utf8)).prefix(16))
        hints.remember(deviceID: Self.id(0), keyID: keyID, identity: identity)
        #expect(hints.hint(for: Self.id(0))?.keyID == keyID && hints.hint(for: Self.id(0))?.identity == identity)
        #expect(hints.hint(for: Self.id(1)) == nil)
        hints.remember(deviceID: "not-a-device-id", keyID: keyID, identity: identity)
        hints.remember(deviceID: Self.id(0).uppercased(), keyID: keyID, identity: identity)
        #expect(hints.count == 1, "only our deviceIds (32 lowercase hex digits) are kept")
        for i in 1..<HeartbeatHints.capacity { hints.remember(deviceID: Self.id(i), keyID: keyID, identity: identity) }
        #expect(hints.count == HeartbeatHints.capacity)
        hints.remember(deviceID: Self.id(HeartbeatHints.capacity), keyID: keyID, identity: identity)
        #expect(hints.count == 1, "full: it starts again empty")
    }

    @Test func onLMDBNothingIsKept() throws {
        guard !Fixture.onPostgres else { return }
        let flow = try DeviceFlow()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        var headers = Fixture.appHeaders
        headers["Authorization"] = "Bearer " + token
        #expect(flow.fixture.call(.mad, body: #"{"sdkVersion":"2.1.0","appState":"active"}"#, headers: headers).0
                    == 200)
        #expect(flow.context.caches.heartbeatHints.count == 0)
    }
}
