import AttestCore
import Testing

/// Redeeming receipts with Apple, the pure parts: the provider token, the answer
/// classification, the schedule and the request cap.
@Suite struct ReceiptRedemptionTests {
    static let key = try! SigningKey.generate(.p256)
    static let deviceCheckKey = try! DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567", pem: key.pemEncoded)
    static let t0 = Timestamp(seconds: 1_800_000_000)
    static let schedule = RedemptionSchedule(intervalHours: 24, firstDelaySeconds: 60, seenWithinDays: 7)

    @Test func theProviderTokenIsAnES256JWTWithKidIssAndIatThatVerifiesWithThePublicHalf() throws {
        let token = try ProviderToken(key: Self.deviceCheckKey).token(at: Self.t0)
        let jwt = try JWT(compact: token)
        #expect(jwt.header == ["alg": "ES256", "kid": "KEY1234567"], "header is alg and kid only")
        #expect(jwt.claims == ["iss": "ABCDE12345", "iat": .int(Self.t0.seconds)])
        #expect(jwt.hasValidES256Signature(try ECPublicKey(subjectPublicKeyInfo: Self.key.subjectPublicKeyInfo)))
        let other = try SigningKey.generate(.p256)
        #expect(!jwt.hasValidES256Signature(try ECPublicKey(subjectPublicKeyInfo: other.subjectPublicKeyInfo)))
    }

    @Test func theTokenIsReusedFor25MinutesThenRenewedWellInsideTheHour() throws {
        let tokens = try ProviderToken(key: Self.deviceCheckKey)
        let first = try tokens.token(at: Self.t0)
        #expect(try tokens.token(at: Self.t0 + 60) == first)
        #expect(try tokens.token(at: Self.t0 + ProviderToken.renewSeconds - 1) == first)
        let renewed = try tokens.token(at: Self.t0 + ProviderToken.renewSeconds)
        #expect(renewed != first)
        #expect(try JWT(compact: renewed).claims["iat"] == .int(Self.t0.seconds + ProviderToken.renewSeconds))
        #expect(ProviderToken.renewSeconds >= 20 * 60 && ProviderToken.renewSeconds <= 30 * 60)
        #expect(try tokens.token(at: Self.t0) != renewed, "a clock set back gets a new token, never a future iat")
    }

    @Test("a .p8 that is not a PKCS #8 P-256 key is refused", arguments: [
        "", "hello", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ])
    func badKeys(pem: String) {
        #expect(throws: AttestError.self) { try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567", pem: pem) }
    }

    @Test func aP384OrRSAKeyIsRefusedAndTheErrorNeverQuotesTheKey() throws {
        for kind in [SigningKey.Kind.p384, .rsa2048] {
            let pem = try SigningKey.generate(kind).pemEncoded
            do {
                _ = try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567", pem: pem)
                Issue.record("\(kind) accepted")
            } catch {
                let body = pem.split(separator: "\n")[1]
                #expect(!"\(error)".contains(body), "the error quotes the key")
            }
        }
    }

    @Test("team and key ids with path characters or the wrong shape are refused", arguments: [
        "../../etc/x", "ABCDE/1234", "abcde12345", "ABCDE1234", "ABCDE123456", "ABCDE.1234", "ABCDE 1234", "",
        "ABCDE\u{0}1234",
    ])
    func badIdentifiers(id: String) {
        #expect(!DeviceCheckKey.isIdentifier(id))
        let pem = Self.key.pemEncoded
        #expect(throws: AttestError.self) { try DeviceCheckKey(teamID: id, keyID: "KEY1234567", pem: pem) }
        #expect(throws: AttestError.self) { try DeviceCheckKey(teamID: "ABCDE12345", keyID: id, pem: pem) }
    }

    @Test func theTeamOfAnAppID() {
        #expect(DeviceCheckKey.teamID(ofAppID: "ABCDE12345.com.example.app") == "ABCDE12345")
        #expect(DeviceCheckKey.teamID(ofAppID: "com.example.app") == nil)
        #expect(DeviceCheckKey.teamID(ofAppID: "../x.app") == nil)
    }

    @Test("every documented answer is classified", arguments: [
        (200, "", RedemptionOutcome.Kind.redeemed),
        (304, "", .tooEarly),
        (400, "Incorrect Environment", .wrongEnvironment),
        (400, "incorrect environment\n", .wrongEnvironment),
        (400, "Bad Payload", .badPayload),
        (400, "", .badPayload),
        (401, "", .unauthorized),
        (404, "No data available for the supplied receipt", .noData),
        (429, "", .throttled),
        (500, "", .serverError),
        (503, "", .serverError),
        (302, "", .unexpected),
        (418, "", .unexpected),
    ])
    func classify(status: Int, body: String, kind: RedemptionOutcome.Kind) {
        let outcome = RedemptionOutcome.classify(status: status, body: Array(body.utf8))
        #expect(outcome.kind == kind, "\(status) \(body)")
        #expect(outcome.status == UInt16(status))
        #expect(outcome.metricLabel == String(status))
        #expect(outcome.stopsTeam == (status == 401))
        #expect(outcome.endsReceipt == (status == 400))
        #expect(outcome.backsOff == [.throttled, .serverError, .unexpected].contains(kind))
    }

    @Test func aTransportErrorHasNoStatusAndCountsAsError() {
        let outcome = RedemptionOutcome.classify(status: 0, body: [], error: "connection refused")
        #expect(outcome.kind == .transportError && outcome.status == 0 && outcome.metricLabel == "error")
        #expect(outcome.backsOff && outcome.text.contains("connection refused"))
    }

    @Test func theBodyQuotedInTheOutcomeIsShortAndOneLine() {
        let body = Array(("Bad\r\nPayload\u{1b}[31m" + String(repeating: "x", count: 500)).utf8)
        let text = RedemptionOutcome.classify(status: 400, body: body).text
        #expect(!text.contains("\n") && !text.contains("\r") && !text.contains("\u{1b}"))
        #expect(text.utf8.count < RedemptionOutcome.excerptBytes + 80)
    }

    @Test func theFirstAttemptIsSoonAfterAttestation() {
        #expect(Self.schedule.first(attestedAt: Self.t0, expiresAt: nil) == Self.t0 + 60)
        #expect(Self.schedule.first(attestedAt: Self.t0, expiresAt: Self.t0 + 30) == nil, "never after expiry")
    }

    @Test func afterA200OncePerIntervalAndNeverBeforeNotBefore() {
        let ok = RedemptionOutcome.classify(status: 200, body: [])
        let s = Self.schedule
        #expect(s.next(after: ok, at: Self.t0, failures: 0, notBefore: Self.t0 + 3600, expiresAt: Self.t0 + 90 * 86_400,
                       jitter: 0) == Self.t0 + 86_400)
        #expect(s.next(after: ok, at: Self.t0, failures: 0, notBefore: Self.t0 + 2 * 86_400,
                       expiresAt: Self.t0 + 90 * 86_400, jitter: 0) == Self.t0 + 2 * 86_400)
        #expect(s.next(after: ok, at: Self.t0, failures: 0, notBefore: nil, expiresAt: Self.t0 + 3600,
                       jitter: 0) == nil)
    }

    @Test func a304WaitsForNotBefore() {
        let early = RedemptionOutcome.classify(status: 304, body: [])
        let s = Self.schedule
        #expect(s.next(after: early, at: Self.t0, failures: 0, notBefore: Self.t0 + 500, expiresAt: nil, jitter: 0)
                == Self.t0 + 500)
        #expect(s.next(after: early, at: Self.t0, failures: 0, notBefore: Self.t0 - 5, expiresAt: nil, jitter: 0)
                == Self.t0 + RedemptionSchedule.tooEarlySeconds, "clocks disagree: an hour later")
    }

    @Test func a400EndsTheReceiptA401DefersA404WaitsAWeek() {
        let s = Self.schedule
        for body in ["Incorrect Environment", "Bad Payload"] {
            let o = RedemptionOutcome.classify(status: 400, body: Array(body.utf8))
            #expect(s.next(after: o, at: Self.t0, failures: 0, notBefore: nil, expiresAt: nil, jitter: 0) == nil)
        }
        let unauthorized = RedemptionOutcome.classify(status: 401, body: [])
        #expect(s.next(after: unauthorized, at: Self.t0, failures: 0, notBefore: nil, expiresAt: nil, jitter: 0)
                == Self.t0 + 86_400)
        let none = RedemptionOutcome.classify(status: 404, body: [])
        #expect(s.next(after: none, at: Self.t0, failures: 0, notBefore: nil, expiresAt: nil, jitter: 0)
                == Self.t0 + RedemptionSchedule.noDataSeconds)
        #expect(s.next(after: none, at: Self.t0, failures: 0, notBefore: nil, expiresAt: Self.t0 + 86_400, jitter: 0)
                == nil, "past the expiry: dropped")
    }

    @Test func failuresBackOffDoublingWithJitterCappedAtTheInterval() {
        let s = Self.schedule
        #expect((1...6).map { s.backoff(failures: $0, jitter: 0) } == [60, 120, 240, 480, 960, 1920])
        #expect(s.backoff(failures: 30, jitter: 0) == 86_400)
        #expect(s.backoff(failures: 1000, jitter: 0.99) <= 86_400 + 86_400 / 4)
        for failures in 1...10 {
            let low = s.backoff(failures: failures, jitter: 0), high = s.backoff(failures: failures, jitter: 0.999)
            #expect(high >= low && high <= low + low / 4, "jitter adds at most a quarter")
            #expect(s.backoff(failures: failures + 1, jitter: 0) > high || low == 86_400, "delays grow")
        }
        let throttled = RedemptionOutcome.classify(status: 429, body: [])
        #expect(s.next(after: throttled, at: Self.t0, failures: 1, notBefore: nil, expiresAt: nil, retryAfter: 600,
                       jitter: 0) == Self.t0 + 600, "Retry-After is honoured")
    }

    @Test func onlyDevicesSeenWithinTheWindow() {
        #expect(Self.schedule.isRecent(lastSeen: Self.t0 - 7 * 86_400, at: Self.t0))
        #expect(!Self.schedule.isRecent(lastSeen: Self.t0 - 7 * 86_400 - 1, at: Self.t0))
        #expect(Self.schedule.deferred(at: Self.t0, expiresAt: nil) == Self.t0 + 86_400)
    }

    @Test func thePacerSpacesRequestsAtTheRate() {
        var pacer = RequestPacer(requestsPerSecond: 5)
        #expect(pacer.wait(at: 0) == 0)
        var starts: [Int64] = []
        var now: Int64 = 0
        while starts.count < 11 {
            let wait = pacer.wait(at: now)
            if wait == 0 { starts.append(now); pacer.started(at: now) } else { now += wait }
        }
        #expect(starts.last! - starts.first! == 2_000_000_000, "11 requests at 5/s take 2 s")
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 >= 200_000_000 })
    }
}
