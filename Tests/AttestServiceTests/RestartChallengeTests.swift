@testable import AttestConfig
import AttestCore
@testable import AttestOperations
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
        try "a-boot-before-the-restart 0\n".write(toFile: data.storeDirectory + "/ephemeral.boot", atomically: true,
                                                  encoding: .utf8)
        let store = try Store(directory: data.storeDirectory, options: config.storeOptions)
        let resetAt = store.ephemeralResetAt
        #expect(resetAt >= wallNow.seconds)
        let clock = FixedClock(Timestamp(seconds: resetAt + 1))
        let context = try ServiceContext(configuration: config, store: store, clock: clock, random: SystemRandom(),
                                         challengeSecret: data.challengeSecret(),
                                         trustAnchors: [AppleAppAttestationRoot.certificate()], testRoots: [],
                                         keyRing: KeyRing(data))
        let ttl = Int64(config.challengeTTLSeconds)
        let appID = Fixture.appID
        func check(_ challenge: String) throws -> [UInt8] {
            try Admission.checkChallenge(challenge, appID: appID, now: clock.now(), context).id
        }
        func issued(_ second: Int64, ttl: Int64, id: UInt8) -> String {
            context.challenges.issue(appID: appID, issued: Timestamp(seconds: second),
                                     expiry: Timestamp(seconds: second + ttl), id: Array(repeating: id, count: 16))
        }
        #expect(throws: ServiceError.self, "issued before the reset: it may have been used") {
            try check(issued(resetAt - 10, ttl: ttl, id: 1))
        }
        #expect(throws: ServiceError.self, "issued before the reset with a longer TTL, lowered since") {
            try check(issued(resetAt - 10, ttl: ttl + 3000, id: 4))
        }
        #expect(try check(issued(resetAt + 1, ttl: ttl, id: 2)) == Array(repeating: 2, count: 16))
        // Fetched in the very second of the reset (a client right after a restore): accepted.
        #expect(try check(issued(resetAt, ttl: ttl, id: 3)) == Array(repeating: 3, count: 16))
        #expect(try check(issued(resetAt, ttl: 10, id: 5)) == Array(repeating: 5, count: 16), "whatever its TTL")

        // Version 1 (older builds) says only its expiry: issued before ⇔ expiry < reset + TTL.
        let v1Before = context.challenges.issueVersion1(appID: appID, expiry: Timestamp(seconds: resetAt - 10 + ttl),
                                                        id: Array(repeating: 6, count: 16))
        let v1After = context.challenges.issueVersion1(appID: appID, expiry: Timestamp(seconds: resetAt + ttl),
                                                       id: Array(repeating: 7, count: 16))
        #expect(throws: ServiceError.self) { try check(v1Before) }
        #expect(try check(v1After) == Array(repeating: 7, count: 16))
    }
}
