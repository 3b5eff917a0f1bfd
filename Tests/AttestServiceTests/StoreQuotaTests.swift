@testable import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
@testable import AttestStore
import Foundation
import Testing

/// Issue 37 item 5: one organization cannot fill the store that every organization shares.
/// Tenant "evil" plays the attacker with its own API key; tenant "acme" (the fixture's app,
/// a device, a webhook endpoint) must not notice.
@Suite struct StoreQuotaTests {
    final class Tenants {
        let flow: DeviceFlow
        let evil: String
        let acme: String
        let queue: DeliveryQueue

        init(configure: (inout Configuration) -> Void) throws {
            flow = try DeviceFlow(configure: { c in
                c.webhookTestEventsPerEndpointPerMinute = 0
                c.webhookTestEventsPerOrganizationPerMinute = 0
                configure(&c)
            })
            evil = try WebhooksAPITests.API.makeKey(flow.fixture, org: "evil")
            acme = try WebhooksAPITests.API.makeKey(flow.fixture, org: "acme")
            let c = flow.context.configuration
            queue = DeliveryQueue(store: flow.context.store, retrySchedule: c.webhookRetrySchedule,
                                  storedQuota: c.webhookStoredDeliveriesPerOrganization)
        }

        var store: Store { flow.context.store }

        func call(_ method: String, _ path: String = "", body: String? = nil,
                  key: String) -> (status: Int, body: JSONValue, headers: [String: String]) {
            let request = Fixture.request(method, WebhooksEndpoint.path + path, body: body,
                                          headers: ["Authorization": "Bearer " + key])
            let response = Endpoint.webhooks.handle(request, flow.context)
            var headers = [String: String]()
            for h in response.headers { headers[h.name] = h.value }
            return (response.status, (try? JSONParser.parse(response.body)) ?? .null, headers)
        }

        func endpoint(_ key: String, _ path: String = "/in") throws -> String {
            let (status, body, _) = call("POST", body: #"{"url":"https://hooks.example.com\#(path)"}"#, key: key)
            guard status == 201, let id = body["id"]?.stringValue else {
                throw FixtureError("create: \(status) \(body.jsonText)")
            }
            return id
        }

        /// Entries of the databases an organization's webhooks fill.
        func webhookEntries() throws -> Int {
            try store.read { try $0.count(.deliveries) + $0.count(.outbox) + $0.count(.deliveryDue) }
        }

        func stored(_ org: String) throws -> WebhookCountRecord { try store.read { try $0.webhookCount(org: org) } }
    }

    @Test func aTenantHammeringTestEventsGets429AndTheStoreStaysBoundedWhileAnotherCarriesOn() throws {
        let t = try Tenants { $0.webhookStoredDeliveriesPerOrganization = 40 }
        let evilHook = try t.endpoint(t.evil), acmeHook = try t.endpoint(t.acme)
        var statuses = [Int](), refusal: JSONValue = .null
        for i in 0..<200 {
            let (status, body, _) = t.call("POST", "/\(evilHook)/test", key: t.evil)
            statuses.append(status)
            if status != 202 { refusal = body }
            if i % 16 == 0 { try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now()) }
        }
        try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now())
        #expect(statuses.prefix(40).allSatisfy { $0 == 202 } && statuses.dropFirst(40).allSatisfy { $0 == 429 },
                "40 test events queued, the other 160 refused: \(statuses.filter { $0 == 202 }.count) queued")
        #expect(refusal["code"]?.stringValue == "store_quota_exceeded")
        #expect(refusal["hint"]?.stringValue?.contains("webhooks.storedDeliveriesPerOrganization") == true,
                "the hint names the config key")
        #expect(refusal["limit"]?.intValue == 40 && refusal["current"]?.intValue == 40)
        #expect(try t.stored("evil").stored == 40)
        let bound = try t.webhookEntries()
        #expect(bound <= 2 * 40 + 1, "deliveries, due entries and outbox hold no more than the quota: \(bound)")

        // The other tenant: its device enrolls and refreshes, its test event is queued, its
        // events are stored.
        let enrolled = try t.flow.enroll()
        #expect(enrolled["token"]?.stringValue != nil)
        let (refreshed, refreshBody) = t.flow.post(.refresh,
                                                   try t.flow.refreshBody(challenge: try t.flow.fixture.challenge()))
        #expect(refreshed == 200, "refresh: \(refreshBody.jsonText)")
        #expect(t.call("POST", "/\(acmeHook)/test", key: t.acme).status == 202)
        try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now())
        let acmeLog = try t.store.read { try $0.deliveries(endpoint: acmeHook) }.map(\.event)
        #expect(Set(acmeLog) == ["device.new", "attestation.completed", "webhook.test"],
                "acme's events all stored: \(acmeLog)")

        // More hammering changes nothing stored.
        for _ in 0..<100 { _ = t.call("POST", "/\(evilHook)/test", key: t.evil) }
        try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now())
        #expect(try t.stored("evil").stored == 40)
        #expect(try t.store.read { try $0.deliveries(endpoint: evilHook).count } == 40)
        #expect(try t.store.check().isConsistent)
    }

    /// The issue's attack: one API key's test events filled a 2 MiB map in seconds, and every
    /// tenant's validate answered 503. With a quota that fits the map, the attacker is refused
    /// and the other tenant's device still enrolls and refreshes.
    @Test(.enabled(if: !Fixture.onPostgres, "LMDB's map")) func aSmallMapIsNotFilledByOneTenantsTestEvents() throws {
        let t = try Tenants {
            $0.durableMapSizeMiB = 2
            $0.webhookStoredDeliveriesPerOrganization = 1_000
        }
        let hook = try t.endpoint(t.evil)
        var queued = 0, last = (status: 0, body: JSONValue.null, headers: [String: String]())
        for i in 0..<12_000 {
            last = t.call("POST", "/\(hook)/test", key: t.evil)
            guard last.status == 202 else { break }
            queued += 1
            // A full map fails the deliverer's turn too; it logs and tries again (`DeliveryWorker.run`).
            if i % 256 == 255 { _ = try? t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now()) }
        }
        _ = try? t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now())
        #expect(queued == 1_000 && last.status == 429 && last.body["code"]?.stringValue == "store_quota_exceeded",
                "refused at its quota, not at a full map: \(queued) queued, then \(last.status) \(last.body.jsonText)")
        let enrolled = t.flow.post(.validate, try t.flow.validateBody(challenge: try t.flow.fixture.challenge()))
        #expect(enrolled.0 == 200, "the other tenant's validate: \(enrolled.1.jsonText)")
        let refreshed = t.flow.post(.refresh, try t.flow.refreshBody(challenge: try t.flow.fixture.challenge()))
        #expect(refreshed.0 == 200, "the other tenant's refresh: \(refreshed.1.jsonText)")
    }

    @Test func testEventsAreRateLimitedPerEndpointAndPerOrganization() throws {
        let t = try Tenants {
            $0.webhookTestEventsPerEndpointPerMinute = 3
            $0.webhookTestEventsPerOrganizationPerMinute = 5
        }
        let first = try t.endpoint(t.evil, "/a"), second = try t.endpoint(t.evil, "/b"),
            acmeHook = try t.endpoint(t.acme)
        let onFirst = (0..<4).map { _ in t.call("POST", "/\(first)/test", key: t.evil) }
        #expect(onFirst.map(\.status) == [202, 202, 202, 429], "3 a minute to one endpoint")
        #expect(onFirst[3].body["code"]?.stringValue == "rate_limited")
        #expect(onFirst[3].body["hint"]?.stringValue?.contains("webhooks.testEventsPerEndpointPerMinute") == true)
        #expect(onFirst[3].headers["Retry-After"].flatMap { Int($0) }.map { (1...60).contains($0) } == true)
        let onSecond = (0..<3).map { _ in t.call("POST", "/\(second)/test", key: t.evil) }
        #expect(onSecond.map(\.status) == [202, 202, 429], "5 a minute for the organization")
        #expect(onSecond[2].body["hint"]?.stringValue?.contains("webhooks.testEventsPerOrganizationPerMinute") == true)
        #expect(t.call("POST", "/\(acmeHook)/test", key: t.acme).status == 202,
                "another organization has its own buckets")
        #expect(t.call("POST", "/wh_nonexistent/test", key: t.evil).status == 404,
                "an unknown endpoint is 404, not 429")
        t.flow.fixture.clock.advance(60)
        #expect(t.call("POST", "/\(first)/test", key: t.evil).status == 202, "the next minute")
    }

    /// Each create, update or delete is a durable write waiting on a sync: one API key in a loop
    /// held the store's single writer and the disk every tenant uses (review finding B4).
    @Test func managementWritesAreRateLimitedPerOrganization() throws {
        let t = try Tenants { $0.webhookWritesPerOrganizationPerMinute = 5 }
        let hook = try t.endpoint(t.evil), acmeHook = try t.endpoint(t.acme)  // one write each
        let patches = (0..<5).map { i in t.call("PATCH", "/\(hook)", body: #"{"description":"d\#(i)"}"#, key: t.evil) }
        #expect(patches.map(\.status) == [200, 200, 200, 200, 429], "5 writes a minute, the creation included")
        #expect(patches[4].body["code"]?.stringValue == "rate_limited")
        #expect(patches[4].body["hint"]?.stringValue?.contains("webhooks.writesPerOrganizationPerMinute") == true)
        #expect(patches[4].headers["Retry-After"].flatMap { Int($0) }.map { (1...60).contains($0) } == true)
        #expect(t.call("DELETE", "/\(hook)", key: t.evil).status == 429, "deletes count too")
        #expect(t.call("POST", body: #"{"url":"https://hooks.example.com/x"}"#, key: t.evil).status == 429,
                "and creations")
        #expect(t.call("GET", "/\(hook)", key: t.evil).status == 200, "reads are not charged")
        #expect(t.call("PATCH", "/\(acmeHook)", body: #"{"description":"mine"}"#, key: t.acme).status == 200,
                "another organization has its own bucket")
        t.flow.fixture.clock.advance(60)
        #expect(t.call("PATCH", "/\(hook)", body: #"{"description":"later"}"#, key: t.evil).status == 200,
                "the next minute")
    }

    @Test func otherEventsPastTheQuotaAreNotStoredAndPruningOrDeletingFreesIt() throws {
        let t = try Tenants {
            $0.webhookStoredDeliveriesPerOrganization = 10
            $0.webhookLogRetentionDays = 1
        }
        let hook = try t.endpoint(t.evil)
        let clock = t.flow.fixture.clock
        // Events an outsider can cause (failed attestations for the tenant's app).
        for _ in 0..<25 {
            try t.store.write([.durable]) { txn in
                try t.flow.context.queueEvent(.attestationFailed, org: "evil", in: txn, now: clock.now(),
                                              data: [("reason", "bad")])
            }
        }
        try t.queue.fanOut(limit: 512, now: clock.now())
        #expect(try t.stored("evil") == WebhookCountRecord(stored: 10, dropped: 15))
        #expect(try t.store.read { try $0.deliveries(endpoint: hook).count } == 10)
        #expect(t.call("POST", "/\(hook)/test", key: t.evil).status == 429)
        // Delivered, then past the log's retention: pruned, and counted out.
        let jobs = try t.queue.due(now: clock.now(), limit: 100, busy: [], perEndpoint: [:], endpointLimit: 100)
        try t.queue.record(jobs.map { ($0, AttemptResult(status: 200, durationMs: 1, excerpt: "", error: "")) },
                           at: clock.now())
        clock.advance(2 * 86_400)
        #expect(try t.queue.prune(createdBefore: clock.now() - 86_400, limit: 4) == 4)
        #expect(try t.stored("evil").stored == 6)
        #expect(t.call("POST", "/\(hook)/test", key: t.evil).status == 202)
        #expect(try t.store.check().isConsistent)
        #expect(t.call("DELETE", "/\(hook)", key: t.evil).status == 200)
        #expect(try t.stored("evil").stored == 1,
                "deleting the endpoint counts its 6 deliveries out; the queued test event stays counted")
        #expect(try t.store.check().isConsistent)
        try t.queue.fanOut(limit: 512, now: clock.now())
        #expect(try t.stored("evil").stored == 0,
                "a test event whose endpoint is gone is counted out when it leaves the outbox")
        #expect(try t.store.check().isConsistent)
    }

    /// An outsider who knows only an app's team and bundle ids (challenges are free) posts
    /// attestations that fail: each queues `device.attestation_failed` for the app's
    /// organization. Past its quota they are not stored; another organization notices nothing.
    @Test func outsidersFailingAttestationsFillOnlyTheirTargetsQuota() throws {
        let t = try Tenants {
            $0.webhookStoredDeliveriesPerOrganization = 5
            $0.validatePerIPPerMinute = 0
        }
        let acmeHook = try t.endpoint(t.acme), evilHook = try t.endpoint(t.evil)
        var statuses = Set<Int>()
        for i in 0..<20 {
            let body = try t.flow.validateBody(challenge: try t.flow.fixture.challenge(), environment: .development)
            statuses.insert(t.flow.post(.validate, body).0)
            if i % 8 == 7 { try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now()) }
        }
        try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now())
        #expect(statuses == [401], "each attestation fails Apple's checks")
        #expect(try t.stored("acme") == WebhookCountRecord(stored: 5, dropped: 15))
        #expect(try t.store.read { try $0.deliveries(endpoint: acmeHook).count } == 5)
        #expect(try t.store.read { try $0.outbox().count } == 0)
        #expect(t.call("POST", "/\(evilHook)/test", key: t.evil).status == 202,
                "another organization's quota is untouched")
        #expect(try t.store.check().isConsistent)
    }

    @Test func endpointsPastTheQuotaAre429() throws {
        let t = try Tenants { $0.webhookEndpointsPerOrganization = 2 }
        _ = try t.endpoint(t.evil, "/1")
        _ = try t.endpoint(t.evil, "/2")
        let (status, body, _) = t.call("POST", body: #"{"url":"https://hooks.example.com/3"}"#, key: t.evil)
        #expect(status == 429 && body["code"]?.stringValue == "store_quota_exceeded")
        #expect(body["hint"]?.stringValue?.contains("webhooks.endpointsPerOrganization") == true)
        #expect(t.call("POST", body: #"{"url":"https://hooks.example.com/x"}"#, key: t.acme).status == 201,
                "another organization's quota is its own")
    }

    /// A store written before the count existed: the first use counts what is there.
    @Test func anOrganizationWithoutARecordIsCountedFromItsDeliveries() throws {
        let t = try Tenants { $0.webhookStoredDeliveriesPerOrganization = 5 }
        let hook = try t.endpoint(t.evil)
        for _ in 0..<4 { #expect(t.call("POST", "/\(hook)/test", key: t.evil).status == 202) }
        try t.queue.fanOut(limit: 2, now: t.flow.fixture.clock.now())
        try t.store.write([.durable]) { txn in _ = try txn.delete(.webhookCounts, Array("evil".utf8)) }
        #expect(try t.stored("evil").stored == 4, "2 deliveries and 2 queued test events")
        #expect(t.call("POST", "/\(hook)/test", key: t.evil).status == 202)
        #expect(t.call("POST", "/\(hook)/test", key: t.evil).status == 429)
        #expect(try t.store.check().isConsistent)
        try t.store.write([.durable]) { txn in try txn.put(WebhookCountRecord(stored: 2), org: "evil") }
        let report = try t.store.check()
        #expect(!report.isConsistent && report.databases.first { $0.database == .webhookCounts }?
                    .problems.first?.contains("evil") == true,
                "store check finds a count that disagrees")
    }

    /// PostgreSQL (`ATTEST_TEST_STORE=postgres`): 4 connections, as 4 hosts, each queueing test
    /// events and fanning them out at once; the quota is exact and the count matches the store.
    @Test(.enabled(if: Fixture.onPostgres, "needs ATTEST_TEST_STORE=postgres"))
    func theQuotaIsExactUnderConcurrentHosts() throws {
        let t = try Tenants { $0.webhookStoredDeliveriesPerOrganization = 30 }
        let hook = try t.endpoint(t.evil)
        let options = t.flow.context.configuration.storeOptions, directory = t.flow.fixture.data.storeDirectory
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var queued = 0, refused = 0, failures = [String]()
            func add(_ change: (Tally) -> Void) { lock.lock(); change(self); lock.unlock() }
        }
        let tally = Tally(), now = t.flow.fixture.clock.now()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let store = try Store(directory: directory, options: options)
                var admin = WebhookAdmin(store: store, allowPrivate: false, random: SystemRandom(), now: now)
                admin.quotas.stored = 30
                let queue = DeliveryQueue(store: store, retrySchedule: [60], storedQuota: 30)
                for _ in 0..<25 {
                    do {
                        _ = try admin.test(org: "evil", id: hook)
                        tally.add { $0.queued += 1 }
                    } catch let e as ServiceError where e.code == .storeQuotaExceeded {
                        tally.add { $0.refused += 1 }
                    }
                    try queue.fanOut(limit: 8, now: now)
                }
            } catch { tally.add { $0.failures.append("\(error)") } }
        }
        let (failures, queued, refused) = (tally.failures, tally.queued, tally.refused)
        #expect(failures.isEmpty)
        #expect(queued == 30 && refused == 70, "\(queued) queued, \(refused) refused")
        try t.queue.fanOut(limit: 512, now: t.flow.fixture.clock.now())
        #expect(try t.stored("evil").stored == 30)
        #expect(try t.store.read { try $0.deliveries(endpoint: hook).count } == 30)
        #expect(try t.store.check().isConsistent)
    }

    /// The figures docs/webhooks.md's quota table is made of (LMDB: pages used in the durable map,
    /// branch pages and free pages included): a test event's delivery as queued, once
    /// delivered at the first attempt, and once failed after the default schedule's 4 attempts
    /// with full 256-byte excerpts.
    @Test(.enabled(if: !Fixture.onPostgres, "LMDB's map")) func bytesPerStoredDelivery() throws {
        let t = try Tenants { $0.webhookStoredDeliveriesPerOrganization = 0 }
        let clock = t.flow.fixture.clock
        var admin = WebhookAdmin(store: t.store, allowPrivate: false, random: SystemRandom(), now: clock.now())
        admin.quotas.stored = 0
        func used() -> Int { t.store.usage().first { $0.environment == .durable }!.used }
        func queue(_ n: Int, to hook: String) throws {
            for i in 0..<n {
                _ = try admin.test(org: "evil", id: hook)
                if i % 500 == 499 || i == n - 1 { try t.queue.fanOut(limit: 512, now: clock.now()) }
            }
        }
        func answer(_ attempts: Int, _ result: AttemptResult) throws {
            for _ in 0..<attempts {
                while case let jobs = try t.queue.due(now: clock.now(), limit: 64, busy: [], perEndpoint: [:],
                                                      endpointLimit: 64), !jobs.isEmpty {
                    try t.queue.record(jobs.map { ($0, result) }, at: clock.now())
                }
                clock.advance(3600)
            }
        }
        try queue(200, to: try t.endpoint(t.evil, "/warm"))  // the tree's first levels
        try answer(1, AttemptResult(status: 200, durationMs: 20, excerpt: #"{"received":true}"#, error: ""))
        let n = 1_000
        var figures = [Int]()
        for (path, attempts, result) in [
            ("/ok", 1, AttemptResult(status: 200, durationMs: 20, excerpt: #"{"received":true}"#, error: "")),
            ("/down", 4, AttemptResult(status: 503, durationMs: 1000, excerpt: String(repeating: "x", count: 256),
                                       error: "HTTP 503 from https://hooks.example.com/down: upstream unavailable"))
        ] {
            let hook = try t.endpoint(t.evil, path)
            let start = used()
            try queue(n, to: hook)
            if figures.isEmpty { figures.append((used() - start) / n) }
            try answer(attempts, result)
            figures.append((used() - start) / n)
        }
        print("FIGURE: bytes of the LMDB map per stored test delivery: \(figures[0]) queued, "
              + "\(figures[1]) delivered at the first attempt, "
              + "\(figures[2]) failed after 4 attempts with 256-byte excerpts")
        #expect(figures[0] > 0 && figures[0] <= 512 && figures[1] <= 768 && figures[2] <= 4_096,
                "docs/webhooks.md's table assumes these bounds: \(figures)")
    }
}
