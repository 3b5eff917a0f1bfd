@testable import AttestConfig
import AttestCore
import AttestMetrics
@testable import AttestOperations
@testable import AttestService
@testable import AttestStore
import AttestTesting
import FastCGI
import Foundation
import Testing

/// Monthly-active-device accounting, plan limits and grace, heartbeat and the usage API
/// (docs/contract.md §2, §4, §8), with an injected clock.
@Suite struct MonthlyUsageTests {
    /// A flow whose organization has `limit` monthly devices and `grace` days.
    func flow(limit: UInt32, grace: UInt16 = 0,
              configure: (inout Configuration) -> Void = { _ in }) throws -> DeviceFlow {
        let flow = try DeviceFlow(configure: configure)
        try flow.context.store.write { txn in
            var org = try #require(try txn.org(named: "acme"))
            org.madLimit = limit
            org.graceDays = grace
            org.upgradeURL = "https://example.com/upgrade"
            try txn.put(org)
        }
        return flow
    }

    func enroll(_ flow: DeviceFlow, _ device: SoftwareDevice, fingerprint: String? = nil) throws -> (Int, JSONValue) {
        flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(), device: device,
                                                   extra: fingerprint.map { [("deviceFingerprint", .string($0))] }
                                                       ?? []))
    }

    /// The month's figures as the report shows them (returning devices' days added).
    func totals(_ flow: DeviceFlow, month: String? = nil) throws -> UsageMonthRecord? {
        try flow.context.store.read {
            try $0.usageMonthReport(org: "acme", month: month ?? flow.fixture.clock.now().monthKey)
        }
    }

    /// The usage events in the outbox (validate also queues device events).
    func outboxEvents(_ flow: DeviceFlow) throws -> [String] {
        try flow.context.store.read { try $0.outbox() }.map(\.event.event).filter { $0.hasPrefix("usage.") }
    }

    func apiKey(_ flow: DeviceFlow, org: String = "acme", scope: APIKeyRecord.Scope = .all) throws -> String {
        let (key, record) = APIKeys.generate(org: org, name: "test", scope: scope, random: SystemRandom(),
                                             now: flow.fixture.clock.now())
        try flow.context.store.write([.durable]) { txn in
            if try txn.org(named: org) == nil {
                try txn.put(OrgRecord(name: org, tier: .pro, createdAt: flow.fixture.clock.now()))
            }
            try txn.put(record)
        }
        return key
    }

    func heartbeat(_ flow: DeviceFlow, bearer: String?, headers: [String: String] = Fixture.appHeaders,
                   body: String = #"{"sdkVersion":"2.1.0","appState":"active"}"#) -> (Int, JSONValue) {
        var h = headers
        if let bearer { h["Authorization"] = "Bearer " + bearer }
        return flow.fixture.call(.mad, body: body, headers: h)
    }

    func usage(_ flow: DeviceFlow, key: String?, query: String = "") -> (Int, JSONValue) {
        var params = ["REQUEST_METHOD": "GET", "DOCUMENT_URI": UsageEndpoint.path, "QUERY_STRING": query,
                      "REQUEST_ID": "u"]
        if let key { params["HTTP_AUTHORIZATION"] = "Bearer " + key }
        let response = Endpoint.mad.handle(Request(fastCGIParams: params), flow.context)
        return (response.status, (try? JSONParser.parse(response.body)) ?? .null)
    }

    // Counting.

    @Test func validateAndRefreshCountADeviceOncePerMonth() throws {
        let flow = try flow(limit: 0)
        try flow.enroll()
        for _ in 0..<3 {
            #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        }
        let t = try #require(try totals(flow))
        #expect(t.activeDevices == 1 && t.days.last == .init(newDevices: 1, activeDevices: 1))
        #expect(t.apps.map(\.appID) == [Fixture.appID] && t.apps[0].activeDevices == 1)
    }

    /// The console's overview: each day's successful attestations and refreshes; a refused
    /// refresh (a replayed counter) is not counted, and the next day starts at zero.
    @Test func attestationsAndRefreshesAreCountedPerDay() throws {
        let flow = try flow(limit: 0)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-01T13:00:00Z")!)
        try flow.enroll()
        for _ in 0..<3 {
            #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        }
        let replay = try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 1)
        #expect(flow.post(.refresh, replay).0 != 200, "a replayed counter is refused")
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-02T13:00:00Z")!)
        _ = try enroll(flow, try SoftwareDevice.generate())
        let key = try apiKey(flow)
        let daily = try #require(usage(flow, key: key).1["daily"]?.arrayValue)
        #expect(daily.map { $0["attestations"]?.intValue } == [1, 1])
        #expect(daily.map { $0["refreshes"]?.intValue } == [3, 0])
    }

    @Test func theMonthRollsOverAtUTCMidnight() throws {
        let flow = try flow(limit: 0)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-30T23:59:59Z")!)
        try flow.enroll()
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-01T00:00:00Z")!)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        #expect(try totals(flow, month: "2026-06")?.activeDevices == 1)
        let july = try #require(try totals(flow, month: "2026-07"))
        #expect(july.activeDevices == 1 && july.days == [.init(newDevices: 1, activeDevices: 1)],
                "counted afresh on July 1st")
    }

    /// Past months' counted devices are swept by one counting in `sweepInterval` (a process's
    /// first included), up to `sweepLimit`: a month's figures stay, its per-device entries go.
    @Test func pastMonthsCountedDevicesAreSweptByLaterCountings() throws {
        let flow = try flow(limit: 0)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-10T12:00:00Z")!)
        let june = UsageIdentity.device(appID: Fixture.appID, fingerprint: "", deviceID: "june")
        func juneEntries() throws -> Int {
            try flow.context.store.read { txn in
                var n = 0
                try txn.scan(.usageDevices, from: Transaction.usageDevicePrefix(month: "2026-06")) { key, _ in
                    guard key.starts(with: Transaction.usageDevicePrefix(month: "2026-06")) else { return false }
                    n += 1
                    return true
                }
                return n
            }
        }
        let org = try #require(try flow.context.store.read { try $0.org(named: "acme") })
        _ = try flow.context.store.write([.durable]) { txn in
            for i in 0..<(RateLimits.sweepLimit + 6) {
                let identity = UsageIdentity.device(appID: Fixture.appID, fingerprint: "", deviceID: "june-\(i)")
                _ = try MonthlyCounter.countActive(identity, appID: Fixture.appID, org: org, in: txn,
                                                   now: flow.fixture.clock.now(), flow.context)
            }
            _ = try MonthlyCounter.countActive(june, appID: Fixture.appID, org: org, in: txn,
                                               now: flow.fixture.clock.now(), flow.context)
        }
        #expect(try juneEntries() == RateLimits.sweepLimit + 7)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-01T23:50:00Z")!)
        func countJuly(_ n: Int) throws {
            _ = try flow.context.store.write([.durable]) { txn in
                for i in 0..<n {
                    let july = UsageIdentity.device(appID: Fixture.appID, fingerprint: "",
                                                    deviceID: "july-\(UInt32.random(in: 0...UInt32.max))-\(i)")
                    _ = try MonthlyCounter.countActive(july, appID: Fixture.appID, org: org, in: txn,
                                                       now: flow.fixture.clock.now(), flow.context)
                }
            }
        }
        flow.context.caches.usageCountings = 0  // as in a process that has not counted yet
        try countJuly(1)
        #expect(try juneEntries() == RateLimits.sweepLimit + 7, "June's entries stay through July's first day")
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-02T00:10:00Z")!)
        flow.context.caches.usageCountings = 0
        try countJuly(1)
        #expect(try juneEntries() == 7, "a process's first counting sweeps \(RateLimits.sweepLimit)")
        try countJuly(RateLimits.sweepInterval - 1)
        #expect(try juneEntries() == 7, "the next \(RateLimits.sweepInterval - 1) do not")
        try countJuly(1)
        #expect(try juneEntries() == 0)
        #expect(try totals(flow, month: "2026-06")?.activeDevices == UInt32(RateLimits.sweepLimit + 7),
                "the month's figures stay")
    }

    @Test func aRequestThatReadTheClockBeforeMidnightFindsItsDeviceAfterTheMonthTurned() throws {
        let flow = try flow(limit: 1, grace: 0)
        let org = try #require(try flow.context.store.read { try $0.org(named: "acme") })
        let x = UsageIdentity.device(appID: Fixture.appID, fingerprint: "", deviceID: "x")
        func count(_ identity: UsageIdentity, at time: String) throws -> MonthlyAdmission {
            try flow.context.store.write([.durable]) { txn in
                try MonthlyCounter.countActive(identity, appID: Fixture.appID, org: org, in: txn,
                                               now: Timestamp(iso8601: time)!, flow.context)
            }
        }
        #expect(try count(x, at: "2026-06-10T12:00:00Z") == .admitted)
        flow.context.caches.usageCountings = 0  // the next counting sweeps
        #expect(try count(.device(appID: Fixture.appID, fingerprint: "", deviceID: "july"), at: "2026-07-01T00:00:00Z")
                    == .admitted)
        // A worker that read the clock at 23:59:59 commits after that: June is at its limit
        // with no grace left, so losing x's entry would refuse it (or count it twice).
        #expect(try count(x, at: "2026-06-30T23:59:59Z") == .alreadyCounted)
        #expect(try totals(flow, month: "2026-06")?.activeDevices == 1)
    }

    @Test func dailyActivityIsCountedOncePerDay() throws {
        let flow = try flow(limit: 0)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-01T13:00:00Z")!)
        try flow.enroll()
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-03T13:00:00Z")!)
        for _ in 0..<2 {
            #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        }
        let t = try #require(try totals(flow))
        #expect(t.days == [.init(newDevices: 1, activeDevices: 1), .init(), .init(newDevices: 0, activeDevices: 1)])
        #expect(t.activeDevices == 1)
        // The returning device's day went to `usage_days`; the month's record, which every
        // returning device used to rewrite, still holds only day 1.
        let record = try flow.context.store.read { try $0.usageMonth(org: "acme", month: "2026-06") }
        #expect(record?.days == [.init(newDevices: 1, activeDevices: 1)])
    }

    @Test func aRegeneratedKeyWithTheSameFingerprintCountsOnce() throws {
        let flow = try flow(limit: 1)
        #expect(try enroll(flow, try SoftwareDevice.generate(), fingerprint: "phone-1").0 == 200)
        #expect(try enroll(flow, try SoftwareDevice.generate(), fingerprint: "phone-1").0 == 200,
                "a new key, a counted fingerprint")
        #expect(try totals(flow)?.activeDevices == 1)
        #expect(try enroll(flow, try SoftwareDevice.generate(), fingerprint: "phone-2").0 == 402)
    }

    // Limits and grace.

    @Test func overTheLimitWithNoGraceANewDeviceIs402WithTheBodyFields() throws {
        let flow = try flow(limit: 2)
        for _ in 0..<2 { #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200) }
        let (status, body) = try enroll(flow, try SoftwareDevice.generate())
        #expect(status == 402 && body["code"]?.stringValue == "quota_exceeded")
        #expect(body["limit"]?.intValue == 2 && body["current"]?.intValue == 2)
        #expect(body["upgradeUrl"]?.stringValue == "https://example.com/upgrade"
                    && body["reason"]?.stringValue == body["error"]?.stringValue)
        #expect(try flow.context.store.read { try $0.count(.devices) } == 2, "the refused device is not stored")
        #expect(try outboxEvents(flow) == ["usage.limit_reached", "usage.grace_ended"])
    }

    @Test func graceAdmitsNewDevicesUntilItEndsThenRefuses() throws {
        let flow = try flow(limit: 1, grace: 7)
        let start = flow.fixture.clock.now()
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200, "starts the grace")
        #expect(try totals(flow)?.graceStartedAt == start)
        flow.fixture.clock.advance(7 * 86_400 - 1)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200, "the last second of grace")
        flow.fixture.clock.advance(1)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 402)
        #expect(try totals(flow)?.activeDevices == 3)
        #expect(try outboxEvents(flow) == ["usage.limit_reached", "usage.grace_ended"], "each event once")
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 402)
        #expect(try outboxEvents(flow).count == 2)
    }

    @Test func aRequestThatReadTheClockBeforeTheGraceStartedIsStillRefusedWhenTheGraceIsOver() throws {
        // Concurrent requests read the clock when they arrive and commit in another order (or
        // on hosts whose clocks differ by a second): one that arrived at t commits after
        // another, arrived at t + 1, started a grace of 0 days. The grace is over for it too.
        let flow = try flow(limit: 1)
        let arrived = flow.fixture.clock.now()
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200)
        flow.fixture.clock.advance(1)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 402, "starts and ends the grace at t + 1")
        flow.fixture.clock.set(arrived)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 402, "the request stamped t is refused too")
        #expect(try totals(flow)?.activeDevices == 1)
    }

    @Test func graceStartsOncePerMonth() throws {
        let flow = try flow(limit: 1, grace: 1)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-10T00:00:00Z")!)
        for _ in 0..<2 { _ = try enroll(flow, try SoftwareDevice.generate()) }
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-20T00:00:00Z")!)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 402, "grace used up for June")
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-01T00:00:00Z")!)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200, "July has a grace of its own")
    }

    @Test func countedDevicesKeepWorkingWhileNewOnesArePaused() throws {
        let flow = try flow(limit: 1)
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 402)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200, "refresh")
        #expect(heartbeat(flow, bearer: token).0 == 200, "heartbeat")
        // A new key on the counted device's fingerprint is that device, not a new one.
        let flow2 = try self.flow(limit: 1)
        #expect(try enroll(flow2, try SoftwareDevice.generate(), fingerprint: "fp").0 == 200)
        #expect(try enroll(flow2, try SoftwareDevice.generate()).0 == 402)
        #expect(try enroll(flow2, try SoftwareDevice.generate(), fingerprint: "fp").0 == 200)
    }

    @Test func aDeviceNotYetCountedThisMonthIsRefusedAtRefresh() throws {
        let flow = try flow(limit: 1)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-20T00:00:00Z")!)
        try flow.enroll()
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-02T00:00:00Z")!)
        #expect(try enroll(flow, try SoftwareDevice.generate()).0 == 200, "another device takes July's only place")
        let (status, body) = flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge()))
        #expect(status == 402 && body["code"]?.stringValue == "quota_exceeded")
        #expect(try flow.storedDevice()?.counter == 0, "the refused refresh does not advance the counter")
    }

    @Test func compatModeAnswers429InTheShapeTheSDKRecognises() throws {
        let flow = try flow(limit: 1, configure: { $0.madLimitStatus = 429 })
        try flow.enroll()
        let (status, body) = try enroll(flow, try SoftwareDevice.generate())
        #expect(status == 429)
        #expect(body["error"]?.stringValue == "mad_limit_exceeded" && body["code"]?.stringValue == "quota_exceeded")
        #expect(body["limit"]?.intValue == 1 && body["current"]?.intValue == 1)
        #expect(body["reason"]?.stringValue?.contains("monthly active device limit") == true)
    }

    // Rate-limit headers.

    @Test func everyValidateAndRefreshAnswerCarriesRateLimitHeaders() throws {
        let flow = try DeviceFlow(rate: 10, configure: { $0.refreshPerIPPerMinute = 100 })
        func headers(_ endpoint: Endpoint, _ body: String) -> [String: String] {
            let r = endpoint.handle(Fixture.request("POST", endpoint.path, body: body, headers: Fixture.appHeaders),
                                    flow.context)
            return Dictionary(r.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        let ok = headers(.validate, try flow.validateBody(challenge: try flow.fixture.challenge()).jsonText)
        #expect(ok["X-RateLimit-Limit"] == "10" && ok["X-RateLimit-Remaining"] == "9",
                "the organization's bucket is the tighter: \(ok)")
        let r2 = headers(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText)
        #expect(r2["X-RateLimit-Remaining"] == "8")
        let bad = headers(.refresh, "{}")
        #expect(bad["X-RateLimit-Limit"] == "100" && bad["X-RateLimit-Remaining"] == "98",
                "an unauthenticated 400 shows its refresh IP bucket: \(bad)")
        let reset = Int(ok["X-RateLimit-Reset"] ?? "") ?? 0
        #expect(reset > 0 && reset <= 60)
        flow.fixture.clock.advance(60)
        let next = headers(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge()).jsonText)
        #expect(next["X-RateLimit-Remaining"] == "9", "a new window resets the bucket")
    }

    // Heartbeat.

    @Test func aHeartbeatWithTheDevicesTokenIs200AndMarksItActive() throws {
        let flow = try flow(limit: 0)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-01T23:40:00Z")!)
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        flow.fixture.clock.advance(1800)  // the next day, within the token's hour
        let (status, body) = heartbeat(flow, bearer: token)
        #expect(status == 200 && body["nextHeartbeatSeconds"]?.intValue == 120 && body["interval"]?.intValue == 120)
        #expect(try totals(flow)?.days.last?.activeDevices == 1, "active on the second day too")
    }

    @Test func heartbeatRefusesExpiredForgedAndOtherTokens() throws {
        let flow = try flow(limit: 0)
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(heartbeat(flow, bearer: nil).0 == 401)
        #expect(heartbeat(flow, bearer: "not-a-token").0 == 401)
        // Forged: the same claims signed by a key the server never published.
        let jwt = try JWT(compact: token)
        let stranger = try JWTSigner(key: try SigningKey.generate(.p256))
        #expect(heartbeat(flow, bearer: try stranger.sign(jwt.claims)).0 == 401, "a key outside the JWKS")
        var tampered = Array(token.utf8)
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == UInt8(ascii: "A")
            ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(heartbeat(flow, bearer: String(decoding: tampered, as: UTF8.self)).0 == 401, "a tampered signature")
        // Another registered app's headers.
        try flow.context.store.write { txn in
            try txn.put(AppRecord(teamID: "OTHER12345", bundleID: "com.other", org: "acme",
                                  createdAt: flow.fixture.clock.now()))
        }
        #expect(heartbeat(flow, bearer: token, headers: ["X-Bundle-ID": "com.other", "X-Team-ID": "OTHER12345"]).0
                    == 401)
        // Revoked device.
        let (revokedStatus, _) = try {
            try flow.context.store.write { txn in
                var d = try #require(try txn.device(keyID: flow.device.keyID))
                d.status = .revoked
                try txn.put(d)
            }
            return heartbeat(flow, bearer: token)
        }()
        #expect(revokedStatus == 401)
        // Expired.
        let fresh = try DeviceFlow()
        let freshToken = try #require(try fresh.enroll()["token"]?.stringValue)
        fresh.fixture.clock.advance(3600)
        let (expired, body) = heartbeat(fresh, bearer: freshToken)
        #expect(expired == 401 && body["code"]?.stringValue == "unauthorized")
    }

    @Test func anRS256TokenIsAcceptedToo() throws {
        let flow = try DeviceFlow()
        _ = try flow.context.keyRing.rotate(algorithm: "RS256", now: flow.fixture.clock.now(), publicationDelay: 0,
                                            overlap: 86_400)
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        #expect(try JWT(compact: token).header["alg"]?.stringValue == "RS256")
        #expect(heartbeat(flow, bearer: token).0 == 200)
    }

    @Test func apiKeyHeartbeatsAreCountedApartAndNotBilled() throws {
        let flow = try flow(limit: 1)
        try flow.enroll()
        let key = try apiKey(flow)
        for id in ["sim-1", "sim-2", "sim-1"] {
            #expect(heartbeat(flow, bearer: key, headers: [:],
                              body: #"{"sdkVersion":"2.1.0","appState":"active","deviceId":"\#(id)"}"#).0 == 200)
        }
        let t = try #require(try totals(flow))
        #expect(t.apiKeyDevices == 2 && t.activeDevices == 1, "two simulators, not billed, never refused")
        #expect(heartbeat(flow, bearer: key, headers: [:]).0 == 400, "deviceId is required with an API key")
        #expect(heartbeat(flow, bearer: "aat_wrongwrongwrongwrongwrongwrong", headers: [:]).0 == 401)
    }

    /// The cap's 429 is a rate limit like the buckets': counted under its own kind.
    @Test func theAPIKeyDeviceCapIsCountedAsARateLimit() throws {
        let flow = try flow(limit: 0, configure: { $0.apiKeyDevicesPerMonth = 1 })
        let key = try apiKey(flow)
        let directory = flow.fixture.path + "/metrics-test"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let segment = try MetricsSegment.open(path: MetricsSegment.path(directory: directory, name: "mad"))
        let slot = MetricsLayout.rateLimited + MetricsLayout.rateBuckets.firstIndex(of: "api-key-devices")!
        ServiceMetrics.$scoped.withValue(segment) {
            for (id, status) in [("sim-1", 200), ("sim-2", 429), ("sim-3", 429)] {
                let request = Fixture.request("POST", HeartbeatEndpoint.path, body: #"{"deviceId":"\#(id)"}"#,
                                              headers: ["Authorization": "Bearer " + key])
                #expect(Endpoint.mad.handle(request, flow.context).status == status, "\(id)")
            }
        }
        #expect(segment.load(slot) == 2)
        let limited = MetricsLayout.rateBuckets.indices.map { segment.load(MetricsLayout.rateLimited + $0) }
        #expect(limited.reduce(0, +) == 2, "\(limited)")
    }

    @Test func apiKeyDevicesAreCappedPerMonthAndTheCapIs429UntilTheMonthEnds() throws {
        let flow = try flow(limit: 0, configure: { $0.apiKeyDevicesPerMonth = 2 })
        let key = try apiKey(flow)
        func beat(_ id: String) -> (Int, String, String?) {
            let request = Fixture.request("POST", HeartbeatEndpoint.path, body: #"{"deviceId":"\#(id)"}"#,
                                          headers: ["Authorization": "Bearer " + key])
            let response = Endpoint.mad.handle(request, flow.context)
            let body = (try? JSONParser.parse(response.body)) ?? .null
            return (response.status, body["code"]?.stringValue ?? "",
                    response.headers.first { $0.name == "Retry-After" }?.value)
        }
        #expect(beat("sim-1").0 == 200 && beat("sim-2").0 == 200)
        let (status, code, retry) = beat("sim-3")
        // 2026-06-01T12:00:00Z: 29 days and 12 hours until July.
        #expect(status == 429 && code == "rate_limited" && retry == String(29 * 86_400 + 43_200),
                "\(status) \(code) \(retry ?? "-")")
        flow.fixture.clock.advance(86_400)
        #expect(beat("sim-1").0 == 200, "a device already reported goes on, on later days too")
        #expect(try totals(flow)?.apiKeyDevices == 2)
        flow.fixture.clock.set(Timestamp(iso8601: "2026-07-01T00:00:00Z")!)
        #expect(beat("sim-3").0 == 200, "a new month, a new count")
        #expect(Configuration().apiKeyDevicesPerMonth == 1_000)
    }

    // Usage API and API keys.

    @Test func aHeartbeatScopedKeySendsHeartbeatsButIsRefusedByTheManagementAPIs() throws {
        let flow = try flow(limit: 0)
        let sdkKey = try apiKey(flow, scope: .heartbeat), adminKey = try apiKey(flow)
        #expect(heartbeat(flow, bearer: sdkKey, headers: [:], body: #"{"deviceId":"sim-1"}"#).0 == 200)
        let refused = usage(flow, key: sdkKey)
        #expect(refused.0 == 403 && refused.1["code"]?.stringValue == "forbidden", "\(refused)")
        func webhooks(_ key: String) -> Int {
            Endpoint.webhooks.handle(Fixture.request("GET", WebhooksEndpoint.path,
                                                     headers: ["Authorization": "Bearer " + key]), flow.context).status
        }
        #expect(webhooks(sdkKey) == 403)
        #expect(usage(flow, key: adminKey).0 == 200 && webhooks(adminKey) == 200, "a key of scope all does everything")
        #expect(heartbeat(flow, bearer: adminKey, headers: [:], body: #"{"deviceId":"sim-2"}"#).0 == 200)
    }

    @Test func theUsageAPIReportsTheKeysOwnOrganization() throws {
        let flow = try flow(limit: 5, grace: 3)
        for _ in 0..<2 { _ = try enroll(flow, try SoftwareDevice.generate()) }
        let key = try apiKey(flow)
        let (status, body) = usage(flow, key: key)
        #expect(status == 200)
        #expect(body["month"]?.stringValue == "2026-06" && body["activeDevices"]?.intValue == 2
                    && body["limit"]?.intValue == 5)
        #expect(body["onboardingPaused"]?.boolValue == false && body["graceStartedAt"]?.isNull == true)
        #expect(body["apps"]?.arrayValue?.first?["appId"]?.stringValue == Fixture.appID)
        let daily = try #require(body["daily"]?.arrayValue)
        #expect(daily.count == 1 && daily[0]["date"]?.stringValue == "2026-06-01"
                    && daily[0]["newDevices"]?.intValue == 2)
        #expect(usage(flow, key: key, query: "month=2026-05").1["activeDevices"]?.intValue == 0)
        #expect(usage(flow, key: key, query: "month=2026-13").0 == 400)
        // Another organization's key sees only its own (empty) figures.
        let other = try apiKey(flow, org: "beta")
        #expect(usage(flow, key: other).1["activeDevices"]?.intValue == 0)
    }

    @Test func wrongOrRevokedKeysAre401() throws {
        let flow = try flow(limit: 5)
        let key = try apiKey(flow)
        #expect(usage(flow, key: nil).0 == 401)
        #expect(usage(flow, key: key + "x").0 == 401)
        #expect(usage(flow, key: "aat_" + String(key.dropFirst(4).reversed())).0 == 401)
        try flow.context.store.write([.durable]) { txn in
            var record = try #require(try txn.apiKey(id: String(key.prefix(12))))
            record.revokedAt = flow.fixture.clock.now()
            try txn.put(record)
        }
        let (status, body) = usage(flow, key: key)
        #expect(status == 401 && body["code"]?.stringValue == "unauthorized")
    }

    @Test func onlyTheKeysHashIsStored() throws {
        let flow = try flow(limit: 5)
        let key = try apiKey(flow)
        let stored = try flow.context.store.read { try $0.apiKeys() }
        #expect(stored.count == 1 && stored[0].hash == SHA256.hash(key.utf8))
        let raw = try flow.context.store.read { txn in try txn.get(.apiKeys, Array(stored[0].id.utf8)) } ?? []
        #expect(!String(decoding: raw, as: UTF8.self).contains(String(key.dropFirst(12))),
                "the secret part is nowhere in the record")
    }
}

