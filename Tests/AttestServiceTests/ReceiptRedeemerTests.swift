import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
import AttestStore
import AttestTesting
import Testing

/// attest-receipts' loop (issue 40 item 3) with the store and a scripted Apple: what is sent,
/// what is stored after each answer, the team stop, the deferrals and the rate cap.
@Suite struct ReceiptRedeemerTests {
    /// Answers from a script (then 200 with `fresh`), recording each request.
    final class ScriptedApple: AppleTransport, @unchecked Sendable {
        var script: [AppleAnswer] = []
        var fresh: () -> [UInt8] = { [] }
        var sent: [(url: String, headers: [(String, String)], body: [UInt8], at: Int)] = []

        func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AppleAnswer {
            sent.append((url, headers, body, monotonicNanoseconds()))
            if !script.isEmpty { return script.removeFirst() }
            return AppleAnswer(status: 200, body: Array(Base64.encode(fresh()).utf8))
        }
    }

    static let sample = try! AttestationObject(cborEncoded: AppleSample.attestationObject[...])
    static let team = "1234567890"

    final class Setup {
        let fixture: Fixture
        let apple = ScriptedApple()
        let authority: TestReceiptAuthority
        let key = try! SigningKey.generate(.p256)
        var hasKey = true
        let verifiers: ReceiptVerifiers
        let publicKey: [UInt8]

        init(requestsPerSecond: Int = 1000) throws {
            fixture = try Fixture(configure: {
                $0.receiptRequestsPerSecond = requestsPerSecond; $0.receiptFirstDelaySeconds = 10
            })
            let now = fixture.clock.now()
            authority = try TestReceiptAuthority.generate(validFrom: now - 86_400, validUntil: now + 400 * 86_400)
            publicKey = Array(try CertificateFields(derEncoded: ReceiptRedeemerTests.sample.x5c[0]).subjectPublicKey)
            let deviceCheckKey = try DeviceCheckKey(teamID: ReceiptRedeemerTests.team, keyID: "KEY1234567",
                                                    pem: key.pemEncoded)
            verifiers = ReceiptVerifiers(apple: try ReceiptVerifier.apple(),
                                         test: [try ReceiptVerifier(anchor: authority.root)])
            let clock = fixture.clock, authority = authority, sample = ReceiptRedeemerTests.sample
            apple.fresh = {
                let attributes = TestReceiptAuthority.attributes(
                    kind: .receipt, appID: AppleSample.appID, credentialCertificate: Array(sample.x5c[0]),
                    createdAt: clock.now(), riskMetric: 3)
                return try! authority.receipt(TestReceiptAuthority.payload(attributes))
            }
            redeemerKeys = { [unowned self] team in self.hasKey ? deviceCheckKey : nil }
        }

        var redeemerKeys: ReceiptRedeemer.KeyLookup = { _ in nil }

        /// A device of Apple's sample app (team 1234567890) with a stored receipt due now.
        func device(_ n: UInt8, lastSeen: Timestamp? = nil) throws -> [UInt8] {
            let keyID = [UInt8](repeating: n, count: 32), now = fixture.clock.now()
            try fixture.context.store.write { txn in
                try txn.put(DeviceRecord(keyID: keyID, deviceID: "d\(n)", appID: AppleSample.appID,
                                         publicKey: publicKey,
                                         environment: .production, createdAt: now, lastSeenAt: lastSeen ?? now,
                                         anchor: .testRoot))
                try txn.put(ReceiptRecord(receipt: [0x30, 0x03, n, n, n], anchor: .testRoot, nextRedeemAt: now),
                            keyID: keyID)
            }
            return keyID
        }

        func record(_ keyID: [UInt8]) throws -> ReceiptRecord {
            try #require(try fixture.context.store.read { try $0.receiptRecord(keyID: keyID) })
        }

        func team() throws -> AppleTeamRecord? {
            try fixture.context.store.read { try $0.appleTeam(ReceiptRedeemerTests.team) }
        }
    }

    static func make(_ requestsPerSecond: Int = 1000) throws -> (Setup, ReceiptRedeemer) {
        let s = try Setup(requestsPerSecond: requestsPerSecond)
        let r = ReceiptRedeemer(store: s.fixture.context.store, configuration: s.fixture.context.configuration,
                                clock: s.fixture.clock, transport: s.apple, keys: s.redeemerKeys,
                                verifiers: s.verifiers, jitter: { 0 },
                                storeRedeemed: ReceiptRedeemer.recorder(s.fixture.context))
        return (s, r)
    }

    @Test func a200StoresTheVerifiedNewReceiptAndSchedulesOnceAnIntervalAfterNotBefore() throws {
        let (s, r) = try Self.make()
        let keyID = try s.device(1)
        #expect(try r.turn() == 1)
        let sent = try #require(s.apple.sent.first)
        #expect(sent.url == "https://data.appattest.apple.com/v1/attestationData", "production host by environment")
        #expect(sent.body == Array(Base64.encode([0x30, 0x03, 1, 1, 1]).utf8), "the stored receipt in base64 text")
        let authorization = try #require(sent.headers.first { $0.0 == "Authorization" }?.1)
        let jwt = try JWT(compact: authorization)
        #expect(jwt.header == ["alg": "ES256", "kid": "KEY1234567"] && jwt.claims["iss"] == "1234567890")
        #expect(jwt.hasValidES256Signature(try ECPublicKey(subjectPublicKeyInfo: s.key.subjectPublicKeyInfo)))
        let record = try s.record(keyID)
        let now = s.fixture.clock.now()
        #expect(record.kind == "RECEIPT" && record.riskMetric == 3 && record.check == .valid)
        #expect(record.receipt != [0x30, 0x03, 1, 1, 1] && record.receipt.count > 100,
                "the new receipt replaced the old")
        #expect(record.redeemedAt == now && record.lastStatus == 200 && record.failures == 0)
        #expect(record.nextRedeemAt == max(now + 86_400, record.notBefore!), "once per interval, not before not-before")
        #expect(record.history.last?.metric == 3)
        #expect(try s.team()?.answers[200] == 1)
        #expect(try r.turn() == 0, "nothing due until then")
    }

    /// Two redeemers on one store (two hosts on a shared PostgreSQL store): the one that
    /// claims a due receipt sends it; the other, turning while that request is in flight,
    /// finds it claimed and sends nothing.
    @Test func aReceiptClaimedByOneRedeemerIsNotSentByAnother() throws {
        let (s, first) = try Self.make()
        let keyID = try s.device(1)
        let other = ReceiptRedeemer(store: s.fixture.context.store, configuration: s.fixture.context.configuration,
                                    clock: s.fixture.clock, transport: s.apple, keys: s.redeemerKeys,
                                    verifiers: s.verifiers, jitter: { 0 },
                                    storeRedeemed: ReceiptRedeemer.recorder(s.fixture.context))
        let fresh = s.apple.fresh
        var handledByOther = -1
        s.apple.fresh = {
            handledByOther = (try? other.turn()) ?? -2
            // A redeemer that listed the receipt as due before the claim: it finds it claimed.
            try? other.handle(due: s.fixture.clock.now(), keyID: keyID)
            return fresh()
        }
        #expect(try first.turn() == 1)
        #expect(s.apple.sent.count == 1, "one request to Apple, not one per redeemer")
        #expect(handledByOther == 0, "the claimed receipt was not due for the other redeemer")
        #expect(try s.record(keyID).redeemedAt == s.fixture.clock.now())
        #expect(try s.fixture.context.store.read { try $0.dueReceipts(at: s.fixture.clock.now() + 3600, limit: 5) }
                    .isEmpty, "the claim's due entry went with the answer")
    }

    @Test func a401StopsTheTeamAndItsOtherReceiptsWaitWithoutARequest() throws {
        let (s, r) = try Self.make()
        let first = try s.device(1)
        s.apple.script = [AppleAnswer(status: 401, body: Array("Unauthorized".utf8))]
        #expect(try r.turn() == 1)
        let team = try #require(try s.team())
        #expect(team.stoppedAt == s.fixture.clock.now() && team.stopReason.contains("401") && team.answers[401] == 1)
        #expect(try s.record(first).nextRedeemAt == s.fixture.clock.now() + 86_400)
        let second = try s.device(2)
        #expect(try r.turn() == 1)
        #expect(s.apple.sent.count == 1, "a stopped team sends nothing")
        #expect(try s.record(second).lastOutcome.contains("stopped"))
        #expect(try s.record(second).nextRedeemAt == s.fixture.clock.now() + 86_400)
    }

    @Test func failuresBackOffDoublingAndA200ResetsThem() throws {
        let (s, r) = try Self.make()
        let keyID = try s.device(1)
        s.apple.script = [AppleAnswer(status: 429, body: []), AppleAnswer(status: 503, body: []),
                          AppleAnswer(status: 0, body: [], error: "connection refused")]
        var delays: [Int64] = []
        for _ in 0..<3 {
            #expect(try r.turn() == 1)
            let record = try s.record(keyID)
            delays.append(record.nextRedeemAt!.seconds - s.fixture.clock.now().seconds)
            s.fixture.clock.set(record.nextRedeemAt!)
        }
        #expect(delays == [10, 20, 40], "receipts.firstDelaySeconds doubled")
        let failed = try s.record(keyID)
        #expect(failed.failures == 3 && failed.lastStatus == 0)
        #expect(try r.turn() == 1)
        let redeemed = try s.record(keyID)
        #expect(redeemed.failures == 0 && redeemed.lastStatus == 200)
    }

    @Test func noKeyOrNotSeenRecentlyIsPutOffWithoutARequest() throws {
        let (s, r) = try Self.make()
        s.hasKey = false
        let keyID = try s.device(1)
        let stale = try s.device(2, lastSeen: s.fixture.clock.now() - 8 * 86_400)
        #expect(try r.turn() == 2)
        #expect(s.apple.sent.isEmpty)
        #expect(try s.record(keyID).lastOutcome.contains("no DeviceCheck key"))
        #expect(try s.record(stale).lastOutcome.contains("not seen"))
        #expect(try s.record(keyID).nextRedeemAt == s.fixture.clock.now() + 86_400)
    }

    @Test func a200WhoseBodyIsNotAValidReceiptKeepsTheOldOneAndBacksOff() throws {
        let (s, r) = try Self.make()
        let keyID = try s.device(1)
        s.apple.script = [AppleAnswer(status: 200, body: Array(Base64.encode([0x30, 0x00]).utf8))]
        #expect(try r.turn() == 1)
        let record = try s.record(keyID)
        #expect(record.receipt == [0x30, 0x03, 1, 1, 1] && record.failures == 1 && record.redeemedAt == nil)
        #expect(record.lastOutcome.contains("not a valid receipt"))
    }

    @Test func the404And400AnswersKeepOrEndTheReceipt() throws {
        let (s, r) = try Self.make()
        let a = try s.device(1), b = try s.device(2)
        s.apple.script = [AppleAnswer(status: 404, body: []), AppleAnswer(status: 400, body: Array("Bad Payload".utf8))]
        #expect(try r.turn() == 2)
        #expect(try s.record(a).nextRedeemAt == s.fixture.clock.now() + RedemptionSchedule.noDataSeconds)
        #expect(try s.record(a).receipt == [0x30, 0x03, 1, 1, 1])
        #expect(try s.record(b).nextRedeemAt == nil)
        s.fixture.clock.advance(30 * 86_400)
        let due = try s.fixture.context.store.read { try $0.dueReceipts(at: s.fixture.clock.now(), limit: 10) }
        #expect(due.count == 1,
                "the 400 receipt left the queue")
    }

    @Test func requestsAreSpacedByTheGlobalCap() throws {
        let (s, r) = try Self.make(20)
        for n in UInt8(1)...5 { _ = try s.device(n) }
        #expect(try r.turn() == 5)
        let starts = s.apple.sent.map(\.at)
        #expect(starts.count == 5)
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 >= 50_000_000 - 1_000_000 },
                "20 requests/s: at least 50 ms apart")
    }
}
