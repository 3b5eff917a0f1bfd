import AttestCore
@testable import AttestService
@testable import AttestStore
import Foundation
import Testing

/// After the machine restarted, LMDB's ephemeral environment (used challenges) is recreated;
/// a challenge that may have been issued before that is refused as expired, so forgetting
/// which challenges were used revives none of them.
@Suite struct RestartChallengeTests {
    @Test func aChallengeIssuedBeforeTheResetIsRefused() throws {
        guard !Fixture.onPostgres else { return }
        var template = Array("/tmp/attest-restart-test-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = DataDirectory(path)
        var config = Configuration()
        config.durableMapSizeMiB = 16
        config.ephemeralMapSizeMiB = 16
        let wallNow = Timestamp(seconds: Int64(time(nil)))
        try data.initialise(configuration: config, now: wallNow)
        do { _ = try Store(directory: data.storeDirectory, options: config.storeOptions) }  // used, then closed
        try "a-boot-before-the-restart 0\n".write(toFile: data.storeDirectory + "/ephemeral.boot", atomically: true, encoding: .utf8)
        let store = try Store(directory: data.storeDirectory, options: config.storeOptions)
        let resetAt = store.ephemeralResetAt
        #expect(resetAt >= wallNow.seconds)
        let clock = FixedClock(Timestamp(seconds: resetAt + 1))
        let context = try ServiceContext(configuration: config, store: store, clock: clock, random: SystemRandom(),
                                         challengeSecret: data.challengeSecret(), trustAnchors: [AppleAppAttestationRoot.certificate()],
                                         testRoots: [], keyRing: KeyRing(data))
        let ttl = Int64(config.challengeTTLSeconds)
        let appID = Fixture.appID
        let before = context.challenges.issue(appID: appID, expiry: Timestamp(seconds: resetAt - 10 + ttl), id: Array(repeating: 1, count: 16))
        let after = context.challenges.issue(appID: appID, expiry: Timestamp(seconds: resetAt + 1 + ttl), id: Array(repeating: 2, count: 16))
        #expect(throws: ServiceError.self, "issued before the reset: it may have been used") {
            _ = try context.checkChallenge(before, appID: appID, now: clock.now())
        }
        let token = try context.checkChallenge(after, appID: appID, now: clock.now())
        #expect(token.id == Array(repeating: 2, count: 16))
        // Fetched in the very second of the reset (a client right after a restore): accepted.
        let sameSecond = context.challenges.issue(appID: appID, expiry: Timestamp(seconds: resetAt + ttl), id: Array(repeating: 3, count: 16))
        #expect(try context.checkChallenge(sameSecond, appID: appID, now: clock.now()).id == Array(repeating: 3, count: 16))
    }
}
