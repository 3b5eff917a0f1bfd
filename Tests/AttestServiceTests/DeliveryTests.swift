import AttestCore
@testable import AttestOperations
import AttestService
import AttestStore
import Dispatch
import Testing

/// Fan-out, retries on the configured schedule, at-least-once and the signatures
/// (docs/webhooks.md), with the store and a scripted transport instead of the network.
@Suite struct DeliveryTests {
    final class Setup {
        let fixture: Fixture
        let queue: DeliveryQueue
        let admin: WebhookAdmin

        init(schedule: [Int] = [1, 5]) throws {
            fixture = try Fixture(configure: {
                $0.webhookAllowPrivateDestinations = true; $0.webhookRetrySchedule = schedule
            })
            queue = DeliveryQueue(store: fixture.context.store, retrySchedule: schedule)
            admin = WebhookAdmin(store: fixture.context.store, allowPrivate: true, random: SystemRandom(),
                                 now: fixture.clock.now())
        }

        func enqueue(_ event: String, org: String = "acme") throws {
            _ = try fixture.context.store.write([.durable]) { txn in
                try txn.enqueue(OutboxEvent(id: "evt_\(event)", event: event, org: org, createdAt: fixture.clock.now(),
                                            dataJSON: #"{"n":1}"#))
            }
        }

        func due() throws -> [DeliveryJob] {
            try queue.due(now: fixture.clock.now(), limit: 100, busy: [], perEndpoint: [:], endpointLimit: 100)
        }

        func log(_ id: String) throws -> [DeliveryRecord] { try admin.deliveries(org: nil, id: id, limit: 100) }
    }

    static func answer(_ status: Int) -> AttemptResult {
        AttemptResult(status: status, durationMs: 3, excerpt: "ok", error: "")
    }

    @Test func eventsFanOutToSubscribedActiveEndpointsOfTheirOrganization() throws {
        let s = try Setup()
        let all = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        let onlyNew = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/b", events: ["device.new"],
                                         description: nil)
        let paused = try s.admin.update(org: nil, id: try s.admin.create(org: "acme", url: "http://127.0.0.1:1/c",
                                                                         events: nil, description: nil).id,
                                        url: nil, events: nil, description: nil, isActive: false)
        try s.enqueue("device.new")
        try s.enqueue("attestation.completed")
        try s.enqueue("device.new", org: "other")
        #expect(try s.queue.fanOut(limit: 100, now: s.fixture.clock.now()) == 3)
        #expect(try s.fixture.context.store.read { try $0.outbox() }.isEmpty,
                "the outbox is emptied by the same transaction")
        #expect(try s.log(all.id).map(\.event) == ["attestation.completed", "device.new"])
        #expect(try s.log(onlyNew.id).map(\.event) == ["device.new"])
        #expect(try s.log(paused.id).isEmpty)
    }

    @Test func fiveHundredTwiceThenTwoHundredIsThreeAttemptsOnTheSchedule() throws {
        let s = try Setup(schedule: [1, 5])
        let endpoint = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        try s.enqueue("device.new")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        for (status, wait) in [(500, 1), (500, 5)] {
            let jobs = try s.due()
            #expect(jobs.count == 1)
            try s.queue.record([(jobs[0], Self.answer(status))], at: s.fixture.clock.now())
            s.fixture.clock.advance(Int64(wait) - 1)
            #expect(try s.due().isEmpty, "not due before the schedule's \(wait) s")
            s.fixture.clock.advance(1)
        }
        try s.queue.record([(try s.due()[0], Self.answer(200))], at: s.fixture.clock.now())
        let d = try #require(try s.log(endpoint.id).first)
        #expect(d.state == .delivered && d.attempts.map(\.status) == [500, 500, 200])
        #expect(try s.due().isEmpty)
    }

    @Test func afterTheLastRetryTheDeliveryFails() throws {
        let s = try Setup(schedule: [1])
        let endpoint = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        try s.enqueue("device.new")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        try s.queue.record([(try s.due()[0], AttemptResult(status: 0, durationMs: 10_000, excerpt: "",
                                                           error: "Timeout was reached"))], at: s.fixture.clock.now())
        s.fixture.clock.advance(1)
        try s.queue.record([(try s.due()[0], Self.answer(503))], at: s.fixture.clock.now())
        let d = try #require(try s.log(endpoint.id).first)
        #expect(d.state == .failed && d.attempts.count == 2 && d.attempts[0].error == "Timeout was reached")
        #expect(try s.due().isEmpty)
    }

    @Test func aJobTakenButNeverRecordedIsDueAgainWhenItsLeaseEnds() throws {
        let s = try Setup()
        _ = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        try s.enqueue("device.new")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        let first = try s.due()
        // A second worker (another host) looking at the same moment finds it leased.
        let other = DeliveryQueue(store: s.fixture.context.store, retrySchedule: [1])
        let meanwhile = try other.due(now: s.fixture.clock.now(), limit: 10, busy: [], perEndpoint: [:],
                                      endpointLimit: 10)
        #expect(first.count == 1 && meanwhile.isEmpty, "one worker holds it")
        // The first sender is killed after sending, before recording; its 60 s lease ends.
        s.fixture.clock.advance(61)
        let again = try other.due(now: s.fixture.clock.now(), limit: 10, busy: [], perEndpoint: [:], endpointLimit: 10)
        #expect(again.count == 1 && again[0].sequence == first[0].sequence)
        #expect(again[0].headers.first { $0.0 == "webhook-id" }?.1 == "evt_device.new", "the same event id")
    }

    @Test func deactivatingAnEndpointSkipsItsPendingDeliveries() throws {
        let s = try Setup()
        let endpoint = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        try s.enqueue("device.new")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        _ = try s.admin.update(org: nil, id: endpoint.id, url: nil, events: nil, description: nil, isActive: false)
        #expect(try s.due().isEmpty)
        #expect(try s.log(endpoint.id).first?.state == .skipped)
    }

    @Test func oneEndpointGetsAtMostItsConcurrency() throws {
        let s = try Setup()
        let slow = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/slow", events: nil, description: nil)
        for i in 0..<5 { try s.enqueue("device.new"); _ = i }
        let fast = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/fast", events: ["attestation.completed"],
                                      description: nil)
        try s.enqueue("attestation.completed")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        let jobs = try s.queue.due(now: s.fixture.clock.now(), limit: 4, busy: [], perEndpoint: [slow.id: 1],
                                   endpointLimit: 2)
        #expect(jobs.filter { $0.endpointID == slow.id }.count == 1, "one more for the endpoint already at 1 of 2")
        #expect(jobs.contains { $0.endpointID == fast.id }, "the other endpoint is not held up")
    }

    /// Creates `count` pending deliveries to `endpoint`'s events in one write (quicker than
    /// the outbox for a backlog), due now.
    func backlog(_ s: Setup, _ count: Int, event: String = "device.new") throws {
        _ = try s.fixture.context.store.write([.durable]) { txn in
            for i in 0..<count {
                try txn.enqueue(OutboxEvent(id: "evt_\(event)_\(i)", event: event, org: "acme",
                                            createdAt: s.fixture.clock.now(), dataJSON: "{}"))
            }
        }
        while try s.queue.fanOut(limit: 512, now: s.fixture.clock.now()) > 0 {}
    }

    @Test func anEndpointAtItsConcurrencyDoesNotHoldUpOthersBehindItsBacklog() throws {
        let s = try Setup()
        let slow = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/slow", events: ["device.new"],
                                      description: nil)
        try backlog(s, 100)
        s.fixture.clock.advance(1)
        let other = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/other", events: ["attestation.completed"],
                                       description: nil)
        try s.enqueue("attestation.completed")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        let jobs = try s.queue.due(now: s.fixture.clock.now(), limit: 14, busy: [], perEndpoint: [slow.id: 2],
                                   endpointLimit: 2)
        #expect(jobs.map(\.endpointID) == [other.id],
                "the slow endpoint's 100 due deliveries come first but it has no room")
    }

    @Test func behindABacklogLongerThanOneScanEveryEndpointIsReachedWithinAFewCalls() throws {
        let s = try Setup()
        let slow = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/slow", events: ["device.new"],
                                      description: nil)
        let backlogSize = DeliveryQueue.scanBudget * 2
        try backlog(s, backlogSize)
        s.fixture.clock.advance(1)
        let other = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/other", events: ["attestation.completed"],
                                       description: nil)
        try s.enqueue("attestation.completed")
        try s.queue.fanOut(limit: 10, now: s.fixture.clock.now())
        var resume: [UInt8]?
        var calls = 0, reached = false
        while !reached && calls < 10 {
            let jobs = try s.queue.due(now: s.fixture.clock.now(), limit: 14, busy: [], perEndpoint: [slow.id: 2],
                                       endpointLimit: 2, resume: &resume)
            #expect(!jobs.contains { $0.endpointID == slow.id })
            reached = jobs.contains { $0.endpointID == other.id }
            calls += 1
        }
        // Each call looks at half the budget from the start and half from where the last one
        // stopped: the entry behind 2 × budget of the slow endpoint's is reached by the 4th.
        #expect(reached && calls <= 4, "reached after \(calls) calls")
        // Without room for the slow endpoint, nothing of its backlog was leased meanwhile.
        let pending = try s.fixture.context.store.read { try $0.deliveries(endpoint: slow.id) }
        #expect(pending.count == backlogSize && pending.allSatisfy { $0.state == .pending && $0.attempts.isEmpty })
    }

    @Test func finishedDeliveriesOlderThanTheRetentionArePrunedPendingOnesStay() throws {
        let s = try Setup(schedule: [1])
        let endpoint = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        // Day 0: three deliveries: one delivered, one failed (after its one retry), one pending.
        try backlog(s, 3)
        let jobs = try s.due()
        try s.queue.record([(jobs[0], Self.answer(200)), (jobs[1], Self.answer(500)), (jobs[2], Self.answer(500))],
                           at: s.fixture.clock.now())
        s.fixture.clock.advance(1)
        try s.queue.record([(try s.due().first { $0.sequence == jobs[1].sequence }!, Self.answer(500))],
                           at: s.fixture.clock.now())
        // Day 2: one more, delivered.
        s.fixture.clock.advance(2 * 86_400)
        try backlog(s, 1, event: "attestation.completed")
        try s.queue.record([(try s.due().max { $0.sequence < $1.sequence }!, Self.answer(200))],
                           at: s.fixture.clock.now())
        #expect(try s.log(endpoint.id).map(\.state) == [.delivered, .pending, .failed, .delivered])

        let removed = try s.queue.prune(createdBefore: s.fixture.clock.now() - 86_400, limit: 100)
        #expect(removed == 2, "the day-0 delivered and failed ones")
        #expect(try s.log(endpoint.id).map(\.state) == [.delivered, .pending], "the day-2 one and the pending one stay")
        #expect(try s.queue.prune(createdBefore: s.fixture.clock.now() - 86_400, limit: 100) == 0)
    }

    @Test func theDelivererPrunesOnItsTurnsAndKeepsUpWithABacklog() throws {
        let s = try Setup()
        var configuration = s.fixture.context.configuration
        configuration.webhookLogRetentionDays = 1
        let endpoint = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        let backlogSize = DeliveryWorker.pruneBatch * 2 + 10
        try backlog(s, backlogSize)
        _ = try s.fixture.context.store.write([.durable]) { txn in
            for d in try txn.deliveries(endpoint: endpoint.id) {
                var done = d
                done.state = .delivered
                done.nextAttemptAt = nil
                try txn.put(done, previousDue: d.nextAttemptAt)
            }
        }
        let worker = DeliveryWorker(store: s.fixture.context.store, configuration: configuration,
                                    clock: s.fixture.clock,
                                    pollMilliseconds: 1) { DeliveryWorkerIdleTests.Answers200() }
        #expect(try !worker.turn(waitMilliseconds: 1), "nothing old enough yet: an idle turn")
        s.fixture.clock.advance(86_400 + 1)
        #expect(try worker.turn(waitMilliseconds: 1), "a full batch: more to do")
        #expect(try worker.turn(waitMilliseconds: 1), "the next turn prunes again without waiting a minute")
        #expect(try !worker.turn(waitMilliseconds: 1), "the rest fit one batch")
        #expect(worker.pruned == backlogSize)
        #expect(try s.log(endpoint.id).isEmpty)
    }

    @Test func theExcerptIsAtMost256BytesWhateverTheAnswer() {
        #expect(AttemptResult.excerpt(of: Array("ok".utf8)) == "ok")
        let binary = AttemptResult.excerpt(of: [UInt8](repeating: 0xFF, count: 4096))
        #expect(binary.utf8.count <= AttemptResult.excerptBytes
                    && binary.unicodeScalars.allSatisfy { $0 == "\u{FFFD}" })
        // "€" is 3 bytes: 256 bytes end one byte into the 86th.
        let text = AttemptResult.excerpt(of: Array(String(repeating: "€", count: 300).utf8))
        #expect(text == String(repeating: "€", count: 85), "the character cut at the edge is dropped")
    }

    @Test func signaturesFollowBothSchemes() {
        // Standard Webhooks' published example (standard-webhooks spec and libraries' tests).
        let body = Array(#"{"test": 2432232314}"#.utf8)
        let headers = WebhookSignature.headers(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                               eventID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                               body: body)
        #expect(headers.first { $0.0 == "webhook-signature" }?.1 == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let grantiva = HMACSHA256(key: Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8)).authenticate(body)
        #expect(headers.first { $0.0 == "X-Grantiva-Signature" }?.1 == "sha256=" + Hex.encode(grantiva))
    }

    @Test func addressRestrictions() {
        let cases: [(String, Bool)] = [
            ("8.8.8.8", true), ("93.184.216.34", true), ("2606:4700::1111", true), ("127.0.0.1", false),
            ("10.1.2.3", false), ("172.16.0.1", false), ("172.32.0.1", true), ("192.168.0.1", false),
            ("169.254.169.254", false), ("100.64.0.1", false), ("0.0.0.0", false), ("224.0.0.251", false),
            ("255.255.255.255", false), ("::1", false), ("::", false), ("fe80::1", false), ("fd00::1", false),
            ("ff02::1", false), ("::ffff:127.0.0.1", false), ("64:ff9b::a00:1", false), ("::127.0.0.1", false),
            ("::8.8.8.8", false), ("64:ff9b:1::808:808", false), ("192.0.2.1", false), ("198.51.100.7", false),
            ("203.0.113.9", false), ("203.0.114.9", true),
            // Transition forms (issue 37 item 8): judged by the IPv4 address they carry.
            ("2002:7f00:1::1", false), ("2002:a00:1::1", false), ("2002:c0a8:101::", false), ("2002:808:808::1", true),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", false), // Teredo client 127.0.0.1 (bits flipped)
            ("2001:0:a00:1:8000:63bf:f7f7:f7f7", false),     // Teredo server 10.0.0.1, client 8.8.8.8
            ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", true),  // server 65.54.227.120, client 8.8.8.8
            ("::ffff:0:7f00:1", false), ("::ffff:0:a9fe:a9fe", false), ("::ffff:0:808:808", true),
            ("192.88.99.1", false), ("192.88.98.1", true), ("64:ff9b::808:808", true), ("64:ff9b::7f00:1", false),
            ("100::1", false), ("2001:2::1", false), ("2001:10::1", false), ("2001:20::1", false), ("3fff::1", false),
            ("2001:4860:4860::8888", true), ("2001:3::1", true),
        ]
        for (text, isPublic) in cases {
            #expect((IPAddress(text)!.restriction == nil) == isPublic,
                    "\(text): \(IPAddress(text)!.restriction ?? "public")")
        }
        #expect(IPAddress("2002:7f00:1::1")!.restriction == "loopback (6to4 of 127.0.0.1)",
                "the reason names the form and the IPv4 address")
    }
}

/// `DeliveryWorker.turn` says whether it found work, which sets how long the next turn waits
/// (an idle deliverer backs off to `idleMilliseconds`).
@Suite struct DeliveryWorkerIdleTests {
    final class Answers200: WebhookTransport {
        func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AttemptResult {
            AttemptResult(status: 200, durationMs: 1, excerpt: "ok", error: "")
        }
    }

    @Test func aTurnReportsWorkUntilTheAttemptIsRecordedThenIdle() throws {
        let s = try DeliveryTests.Setup()
        let worker = DeliveryWorker(store: s.fixture.context.store, configuration: s.fixture.context.configuration,
                                    clock: s.fixture.clock, pollMilliseconds: 5) { Answers200() }
        #expect(try !worker.turn(), "an empty outbox and no deliveries: nothing to do")
        _ = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        try s.enqueue("device.new")
        #expect(try worker.turn(), "the event fanned out and its attempt started")
        var turns = 0
        while worker.delivered == 0 && turns < 2_000 { _ = try worker.turn(waitMilliseconds: 5); turns += 1 }
        #expect(worker.delivered == 1)
        #expect(try !worker.turn(), "delivered and recorded: idle again")
    }
}

/// A recording that fails (the store unreachable or full) keeps its results: they are recorded
/// once the store answers again, and their sender slots come back.
@Suite struct DeliveryWorkerRecordFailureTests {
    struct StoreDown: Error {}

    @Test func resultsWhoseRecordingFailedAreRecordedLaterAndTheirSlotsFreed() throws {
        let s = try DeliveryTests.Setup()
        var configuration = s.fixture.context.configuration
        configuration.webhookMaxConcurrentDeliveries = 1
        let worker = DeliveryWorker(store: s.fixture.context.store, configuration: configuration,
                                    clock: s.fixture.clock,
                                    pollMilliseconds: 5) { DeliveryWorkerIdleTests.Answers200() }
        let endpoint = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/a", events: nil, description: nil)
        try s.enqueue("device.new")
        var failures = 0
        worker.beforeRecord = { if failures < 3 { failures += 1; throw StoreDown() } }
        var turns = 0, errors = 0
        while worker.delivered == 0 && turns < 2_000 {
            do { _ = try worker.turn(waitMilliseconds: 5) } catch is StoreDown { errors += 1 }
            turns += 1
        }
        #expect(errors == 3, "each failed recording surfaces as an error of its turn")
        #expect(worker.delivered == 1 && worker.attempts == 1,
                "the attempt is recorded once the store answers, not sent again")
        #expect(try s.log(endpoint.id).first?.attempts.count == 1)
        // The one sender slot is free again: a later event is delivered too.
        try s.enqueue("attestation.completed")
        turns = 0
        while worker.delivered < 2 && turns < 2_000 { _ = try worker.turn(waitMilliseconds: 5); turns += 1 }
        #expect(worker.delivered == 2)
        #expect(try s.log(endpoint.id).allSatisfy { $0.state == .delivered })
    }
}

/// One organization's slow endpoints hold at most `webhooks.concurrencyPerOrganization` of the
/// sender's threads: another organization's deliveries still go out.
@Suite struct DeliveryWorkerFairnessTests {
    /// Holds every attempt to a URL containing "/slow" until `release` (or 20 s); answers the
    /// others at once.
    final class SlowForSome: WebhookTransport, @unchecked Sendable {
        let held = DispatchSemaphore(value: 0)
        func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AttemptResult {
            if url.contains("/slow") { _ = held.wait(timeout: .now() + 20) }
            return AttemptResult(status: 200, durationMs: 1, excerpt: "ok", error: "")
        }
        func release(_ n: Int) { for _ in 0..<n { held.signal() } }
    }

    /// Whether acme's one delivery is delivered while evil's 3 slow endpoints (2 deliveries
    /// each, due first) hold what they may of 4 threads, `perOrganization` of them at most.
    func acmeGetsThrough(perOrganization: Int) throws -> Bool {
        let s = try DeliveryTests.Setup()
        var configuration = s.fixture.context.configuration
        configuration.webhookMaxConcurrentDeliveries = 4
        configuration.webhookConcurrencyPerEndpoint = 2
        configuration.webhookConcurrencyPerOrganization = perOrganization
        let transport = SlowForSome()
        let worker = DeliveryWorker(store: s.fixture.context.store, configuration: configuration,
                                    clock: s.fixture.clock, pollMilliseconds: 5) { transport }
        _ = try WebhooksAPITests.API.makeKey(s.fixture, org: "evil")  // the organization
        for i in 0..<3 {
            _ = try s.admin.create(org: "evil", url: "http://127.0.0.1:1/slow\(i)", events: nil, description: nil)
        }
        try s.enqueue("device.new", org: "evil")
        try s.enqueue("attestation.completed", org: "evil")
        _ = try worker.turn(waitMilliseconds: 5)  // evil's 6 deliveries are due first
        s.fixture.clock.advance(1)
        _ = try s.admin.create(org: "acme", url: "http://127.0.0.1:1/fast", events: nil, description: nil)
        try s.enqueue("device.new", org: "acme")
        for _ in 0..<40 where worker.delivered == 0 { _ = try worker.turn(waitMilliseconds: 5) }
        let through = worker.delivered == 1
        transport.release(6)
        for _ in 0..<400 where worker.delivered < 7 { _ = try worker.turn(waitMilliseconds: 5) }
        return through
    }

    @Test func anotherOrganizationsDeliveryGoesOutWhileOneOrganizationsSlowEndpointsHoldTheirShare() throws {
        #expect(try acmeGetsThrough(perOrganization: 2), "evil holds 2 of 4 threads; acme's delivery takes a third")
    }

    @Test func withoutThePerOrganizationLimitOneOrganizationTakesEveryThread() throws {
        // The control: as before the limit existed, evil's slow endpoints fill all 4 threads.
        #expect(try !acmeGetsThrough(perOrganization: 0), "with no per-organization limit acme waits behind evil")
    }
}
