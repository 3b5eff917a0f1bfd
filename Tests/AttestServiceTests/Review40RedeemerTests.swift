import AttestCore
@testable import AttestOperations
import AttestService
import AttestStore
import Testing

/// Review of issue 40: one test per finding (R40-1 … R40-6), each failing before its fix.
@Suite struct Review40RedeemerTests {
    /// Finding R40-1: a `receipt_due` entry whose receipt is due at another time (the
    /// inconsistency `attestctl store check` names) is answered `.claimedElsewhere` and left in
    /// place: every turn reads it again, counts it as handled (so `run` never sleeps: a busy
    /// loop) and 64 of them hide every receipt really due behind them.
    @Test func staleDueEntriesAreLeftForeverAndStarveRealReceipts() throws {
        let (s, r) = try ReceiptRedeemerTests.make()
        let now = s.fixture.clock.now()
        for n in UInt8(1)...UInt8(ReceiptRedeemer.batch) {
            let keyID = try s.device(n)
            try s.fixture.context.store.write { txn in
                guard var record = try txn.receiptRecord(keyID: keyID) else { return }
                let previous = record.nextRedeemAt
                record.nextRedeemAt = now + 3600
                try txn.put(record, keyID: keyID, previousDue: previous)
                _ = try txn.put(.receiptDue, BigEndian.bytes((now - 10).seconds) + keyID, [])
            }
        }
        let real = try s.device(200)
        #expect(try r.turn() == ReceiptRedeemer.batch, "the stale entries are removed")
        #expect(try r.turn() == 1, "then the receipt really due is sent")
        #expect(s.apple.sent.count == 1, "the receipt really due (device 200) was never sent")
        #expect(try s.record(real).lastAttemptAt != nil)
        #expect(try r.turn() == 0, "nothing left to read again: run() sleeps")
        #expect(try s.fixture.context.store.read { try $0.dueReceipts(at: now, limit: 100) }.isEmpty)
    }

    /// Finding R40-2: Apple's 429 (here with Retry-After: 120) backs off only the receipt it
    /// answered; the next due receipts of the same turn are sent right after it, so a throttled
    /// redeemer keeps hitting Apple at `receipts.requestsPerSecond` with up to 64 requests a turn.
    @Test func a429DoesNotSlowTheOtherReceiptsOfTheTurn() throws {
        let (s, r) = try ReceiptRedeemerTests.make()
        for n in UInt8(1)...UInt8(3) { _ = try s.device(n) }
        s.apple.script = [AppleAnswer(status: 429, body: [], retryAfter: 120),
                          AppleAnswer(status: 429, body: [], retryAfter: 120),
                          AppleAnswer(status: 429, body: [], retryAfter: 120)]
        try r.turn()
        #expect(s.apple.sent.count == 1, "after a 429 with Retry-After 120, \(s.apple.sent.count) requests were sent")
    }

    /// Finding R40-3: `attestctl apple key add` clears a 401 stop and prints "its receipts are
    /// redeemed again", but every receipt of the team looked at during the stop was put off a
    /// whole `receipts.intervalHours` (24 h): after the stop is lifted nothing is sent for a day.
    @Test func liftingA401StopRedeemsTheTeamsReceiptsAgainSoon() throws {
        let (s, r) = try ReceiptRedeemerTests.make()
        _ = try s.device(1)
        let second = try s.device(2)
        s.apple.script = [AppleAnswer(status: 401, body: [])]
        try r.turn()
        #expect(s.apple.sent.count == 1)
        s.fixture.clock.advance(60)
        try r.turn()
        #expect(s.apple.sent.count == 1, "while the team is stopped nothing is sent")
        // What AppleCommand's `add` does: the stop lifted, the team's put-off receipts due again.
        try s.fixture.context.store.write { txn in
            guard var team = try txn.appleTeam(ReceiptRedeemerTests.team) else { return }
            team.stoppedAt = nil
            team.stopReason = ""
            try txn.put(team)
        }
        s.fixture.clock.advance(3600)
        #expect(try ReceiptRedeemer.resume(team: ReceiptRedeemerTests.team, store: s.fixture.context.store,
                                           at: s.fixture.clock.now()) == 1)
        try r.turn()
        let until = try s.record(second).nextRedeemAt?.iso8601 ?? "never"
        #expect(s.apple.sent.count == 2, "an hour after the stop was lifted, device 2 is still put off until \(until)")
    }

    final class KeyBox: @unchecked Sendable {
        var key: DeviceCheckKey
        init(_ key: DeviceCheckKey) { self.key = key }
    }

    /// Finding R40-4: the redeemer caches each team's provider token by key id only
    /// (`ReceiptRedeemer.providerToken`). After a 401 from a wrong .p8 the operator adds the
    /// right one under the same key id (Apple's AuthKey_KEYID.p8 names it), which lifts the
    /// stop; the running attest-receipts keeps sending the token the wrong key signed for up to
    /// 25 minutes (`ProviderToken.renewSeconds`), gets 401 again and stops the team again.
    @Test func aKeyReplacedUnderTheSameKeyIDSignsTheNextRequest() throws {
        let s = try ReceiptRedeemerTests.Setup()
        let wrong = try SigningKey.generate(.p256), right = try SigningKey.generate(.p256)
        let box = KeyBox(try DeviceCheckKey(teamID: ReceiptRedeemerTests.team, keyID: "KEY1234567",
                                            pem: wrong.pemEncoded))
        let r = ReceiptRedeemer(store: s.fixture.context.store, configuration: s.fixture.context.configuration,
                                clock: s.fixture.clock, transport: s.apple, keys: { _ in box.key },
                                verifiers: s.verifiers, jitter: { 0 },
                                storeRedeemed: ReceiptRedeemer.recorder(s.fixture.context))
        _ = try s.device(1)
        s.apple.script = [AppleAnswer(status: 401, body: [])]
        try r.turn()
        // attestctl apple key add --team … --key-id KEY1234567 --p8 (the right file): new key, stop lifted.
        box.key = try DeviceCheckKey(teamID: ReceiptRedeemerTests.team, keyID: "KEY1234567", pem: right.pemEncoded)
        try s.fixture.context.store.write { txn in
            guard var team = try txn.appleTeam(ReceiptRedeemerTests.team) else { return }
            team.stoppedAt = nil
            team.stopReason = ""
            try txn.put(team)
        }
        _ = try s.device(2)
        try r.turn()
        #expect(s.apple.sent.count == 2)
        let authorization = try #require(s.apple.sent.last?.headers.first { $0.0 == "Authorization" }?.1)
        let jwt = try JWT(compact: authorization)
        #expect(jwt.hasValidES256Signature(try ECPublicKey(subjectPublicKeyInfo: right.subjectPublicKeyInfo)),
                "the request after the key was replaced is signed with the old (wrong) key")
    }

    /// Finding R40-5: `receipts.appleURL` takes any text and `CurlAppleTransport` uses the plain
    /// `HTTPClient` (every libcurl protocol, proxies from the environment, the whole answer read
    /// before `bodyCap` trims it), not `GuardedPost` as the webhook sender does. A `file://`
    /// base (the appended path becomes a fragment) makes attest-receipts read a local file as
    /// the data owner and quote its first 120 bytes in the log, the receipt's `lastOutcome`
    /// and `attestctl receipts status`; `http://` sends the provider token in clear text.
    @Test func theAppleTransportReachesOnlyHTTPS() {
        let url = AppleEndpoint.url(base: "file:///etc/os-release#", environment: .production)
        let answer = CurlAppleTransport(caFile: "").post(url: url, headers: [("Authorization", "a.provider.token")],
                                                         body: Array("receipt".utf8), timeoutSeconds: 5)
        let outcome = RedemptionOutcome.classify(status: answer.status, body: answer.body, error: answer.error)
        #expect(answer.body.isEmpty && answer.error != nil,
                "\(url) answered \(answer.body.count) bytes; stored as lastOutcome: \(outcome.text)")
    }

    /// Finding R40-6: `plan` reads the team's key inside the claim transaction and `turn` lets
    /// any error escape: one team whose key files no longer load (a truncated .p8, a bad
    /// .keyid, a refused file: `AppleKeyStore.key` throws) makes `handle` throw for the oldest
    /// due receipt, the turn ends there, and the next turn meets the same receipt first. No
    /// receipt of any other team is sent again (head-of-line blocking; a corrupt receipt or
    /// device record does the same).
    @Test func oneTeamsBrokenKeyStallsEveryOtherTeam() throws {
        let s = try ReceiptRedeemerTests.Setup()
        let good = try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567",
                                      pem: try SigningKey.generate(.p256).pemEncoded)
        let r = ReceiptRedeemer(store: s.fixture.context.store, configuration: s.fixture.context.configuration,
                                clock: s.fixture.clock, transport: s.apple, keys: { team in
                                    if team == ReceiptRedeemerTests.team {
                                        throw AttestError(.keyInvalid, "the .p8 file does not hold a private key")
                                    }
                                    return good
                                }, verifiers: s.verifiers, jitter: { 0 },
                                storeRedeemed: ReceiptRedeemer.recorder(s.fixture.context))
        _ = try s.device(1)  // team 1234567890, due now, first in the queue
        let other = [UInt8](repeating: 9, count: 32), now = s.fixture.clock.now()
        try s.fixture.context.store.write { txn in
            try txn.put(DeviceRecord(keyID: other, deviceID: "d9", appID: "ABCDE12345.com.example.other",
                                     publicKey: s.publicKey, environment: .production, createdAt: now,
                                     lastSeenAt: now, anchor: .testRoot))
            try txn.put(ReceiptRecord(receipt: [0x30, 0x03, 9, 9, 9], anchor: .testRoot, nextRedeemAt: now),
                        keyID: other)
        }
        var errors = [String]()
        for _ in 0..<3 {
            do { try r.turn() } catch { errors.append(String(describing: error)) }
        }
        #expect(s.apple.sent.count == 1,
                "team ABCDE12345's receipt was never sent; every turn failed: \(errors.first ?? "no error")")
    }
}
