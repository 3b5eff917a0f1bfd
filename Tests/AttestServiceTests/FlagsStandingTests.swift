import AttestCore
@testable import AttestService
import AttestStore
import AttestTesting
import FastCGI
import Testing

/// A block applies to a device's whole lineage, but `DeviceFlags.apply` mirrors it only onto
/// the keys the lineage's `history` keeps (the latest `LineageRecord.historyLimit`, 32): an
/// older key of a blocked fingerprint keeps an unblocked record (found by the review of #41).
/// The flags pool judges the lineage too (`FlagsAuth.standing`), and the stream's holder
/// channel is the lineage's, so the block's one delete ends that key's open stream as well.
@Suite struct FlagsStandingTests {
    @Test func aBlockReachesAKeyOlderThanTheLineagesHistory() throws {
        let flow = try DeviceFlow()
        let old = flow.device
        let token = try #require(try flow.attest(old, [("deviceFingerprint", "phone-1")]).1["token"]?.stringValue)
        let oldDevice = try #require(try flow.storedDevice())
        var newest = old
        for _ in 0..<LineageRecord.historyLimit {
            newest = try SoftwareDevice.generate()
            #expect(try flow.attest(newest, [("deviceFingerprint", "phone-1")]).0 == 200)
        }
        let change = try flow.flag(.block, newest.keyID, reason: "fraud on the newest key")
        #expect(change.flags.contains(.blocked))
        // The stream of the oldest key must end with the others': the CLI deletes the holder of
        // the blocked device's lineage, which the oldest key's stream holds too.
        let closed = FlagChannel.holder(lineage: LineageKey.of(change.device))
        #expect(closed == FlagChannel.holder(lineage: LineageKey.of(oldDevice)))
        // And its reconnect (and its GET) must be refused: the fingerprint is blocked.
        var headers = Fixture.appHeaders
        headers["Authorization"] = "Bearer " + token
        let get = Endpoint.flags.handle(FlagsPoolTests.request(FlagsEndpoint.path, headers: headers), flow.context)
        #expect(get.status == 403, "GET /api/v1/flags for a key of a blocked fingerprint: \(get.status)")
        let auth = Endpoint.flags.handle(FlagsPoolTests.request(FlagsStreamAuth.path, uri: "/api/v1/flags/stream",
                                                                headers: headers), flow.context)
        #expect(auth.status == 403, "the stream's auth for a key of a blocked fingerprint: \(auth.status)")
    }
}
