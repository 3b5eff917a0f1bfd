import AttestCore
import AttestMetrics
@testable import AttestService
import AttestStore
import AttestTesting
import FastCGI
import Foundation
import Testing

/// Group commit (`GroupCommitter`): a pool worker (LMDB in either sync mode, or PostgreSQL) queues
/// each refresh's final write, holds its answer, and commits the held ones together when it
/// settles; the answers are built from what each write did. (PostgreSQL's `durableVersion`
/// also moves with the clock's second, so commits are counted there on LMDB only.)
@Suite struct GroupCommitTests {
    private func refresh(_ responder: inout ServiceResponder, _ flow: DeviceFlow,
                         counter: UInt32) throws -> (Response, Deferral?) {
        let body = try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: counter)
        let response = responder.respond(to: Fixture.request("POST", Endpoint.refresh.path, body: body.jsonText,
                                                             headers: Fixture.appHeaders))
        return (response, responder.deferral())
    }

    @Test func heldRefreshesAreCommittedOnceAndAnsweredFromTheirOwnWrites() throws {
        let flow = try DeviceFlow(configure: { $0.requestLog = .all })
        try flow.enroll()
        var responder = ServiceResponder(endpoint: .refresh, context: flow.context, holdsAnswers: true)
        let store = flow.context.store
        let version = store.durableVersion
        let logged = flow.fixture.logs.count
        let (_, first) = try refresh(&responder, flow, counter: 5)
        let (_, replayed) = try refresh(&responder, flow, counter: 5)  // the same counter again
        let held = [try #require(first), try #require(replayed)]
        #expect(held.allSatisfy { $0.position == GroupCommitter.groupPosition && $0.final != nil })
        let settledEarly = held.map { responder.isSettled($0.position) }
        #expect(settledEarly == [false, false])
        if !Fixture.onPostgres {
            #expect(store.durableVersion == version, "nothing committed before the worker settles")
        }
        #expect(try flow.storedDevice()?.counter == 0)
        #expect(flow.fixture.logs.count == logged + 2, "the two challenges' lines only")

        let committed = responder.settle(GroupCommitter.groupPosition)
        #expect(committed)
        if !Fixture.onPostgres { #expect(store.durableVersion == version + 1, "one commit for both") }
        #expect(store.isDurable(store.durableVersion))
        let answers = held.map { $0.final!() }
        #expect(answers[0].status == 200)
        #expect(try JSONParser.parse(answers[0].body)["token"]?.stringValue != nil)
        // The second write saw the first's counter in the shared transaction: a replay, which
        // invalidates the device as it would have alone.
        #expect(answers[1].status == 409)
        #expect(try JSONParser.parse(answers[1].body)["code"]?.stringValue == "reattest_required")
        #expect(try flow.storedDevice()?.status == .invalidated)
        held.forEach { $0.released() }
        let lines = flow.fixture.logs.dropFirst(logged + 2)
        #expect(lines.count == 2 && lines.first?.contains("status=200") == true
                    && lines.last?.contains("status=409") == true, "\(lines)")
    }

    /// `store.sync = interval`: the commit syncs nothing, but the worker still groups (one
    /// commit's page writes for the whole group); the answers leave after that commit.
    @Test func inIntervalModeRefreshesAreGroupedWithoutASync() throws {
        let flow = try DeviceFlow(configure: { $0.sync = .interval; $0.syncIntervalMs = 10_000 })
        try flow.enroll()
        var responder = ServiceResponder(endpoint: .refresh, context: flow.context, holdsAnswers: true)
        let store = flow.context.store
        let version = store.durableVersion
        let (_, first) = try refresh(&responder, flow, counter: 1)
        let (_, second) = try refresh(&responder, flow, counter: 2)
        let held = [try #require(first), try #require(second)]
        #expect(held.allSatisfy { $0.position == GroupCommitter.groupPosition })
        let settledEarly = held.map { responder.isSettled($0.position) }
        #expect(settledEarly == [false, false], "a grouped answer waits for its group's commit in this mode too")
        #expect(try flow.storedDevice()?.counter == 0)
        let committed = responder.settle(GroupCommitter.groupPosition)
        #expect(committed)
        if !Fixture.onPostgres { #expect(store.durableVersion == version + 1, "one commit for both") }
        #expect(store.durabilitySyncs == 0, "answers in interval mode never wait for a sync")
        #expect(held.map { $0.final!().status } == [200, 200])
        #expect(try flow.storedDevice()?.counter == 2)
    }

    /// One enrollment's write fails inside the group (a fault injected after it wrote its
    /// device and events): only that write is rolled back, and only that request fails, with the
    /// 500 it would have had alone (`WebhookEventTests`).
    @Test func aWriteThatFailsInTheGroupIsRolledBackAlone() throws {
        let flow = try DeviceFlow()
        struct Injected: Error {}
        final class Calls { var n = 0 }
        let calls = Calls()
        flow.context.faults.afterValidateWrites = {
            calls.n += 1
            if calls.n == 2 { throw Injected() }
        }
        var responder = ServiceResponder(endpoint: .validate, context: flow.context, holdsAnswers: true)
        let devices = [flow.device, try SoftwareDevice.generate(), try SoftwareDevice.generate()]
        var held: [Deferral] = []
        for device in devices {
            let body = try flow.validateBody(challenge: try flow.fixture.challenge(), device: device)
            _ = responder.respond(to: Fixture.request("POST", Endpoint.validate.path, body: body.jsonText,
                                                      headers: Fixture.appHeaders))
            let deferral = responder.deferral()
            held.append(try #require(deferral))
        }
        let version = flow.context.store.durableVersion
        let committed = responder.settle(GroupCommitter.groupPosition)
        #expect(committed)
        if !Fixture.onPostgres { #expect(flow.context.store.durableVersion == version + 1, "one commit for the group") }
        #expect(held.map { $0.final!().status } == [200, 500, 200])
        let stored = try flow.context.store.read { txn in try devices.map { try txn.device(keyID: $0.keyID) != nil } }
        #expect(stored == [true, false, true], "the failed write left nothing; the others are stored")
    }

    @Test func aRefreshThatFailsBeforeItsWriteIsAnsweredAtOnce() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        var responder = ServiceResponder(endpoint: .refresh, context: flow.context, holdsAnswers: true)
        let response = responder.respond(to: Fixture.request("POST", Endpoint.refresh.path, body: "{}",
                                                             headers: Fixture.appHeaders))
        #expect(response.status == 400)
        let deferral = responder.deferral()
        #expect(deferral == nil || deferral?.position != GroupCommitter.groupPosition, "nothing queued")
        #expect(responder.committer?.writeGroup.isEmpty == true)
    }

    @Test func withoutHoldingTheWriteCommitsAtOnce() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        #expect(!ServiceResponder(endpoint: .refresh, context: flow.context).groupsWrites)
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        #expect(try flow.storedDevice()?.counter == 1)
    }

    /// A held refresh whose settle fails after its answer was built (its sync failed) leaves as
    /// a 503 and counts no refresh outcome; the next one counts `ok` when its answer leaves, not
    /// before. (Counted into this test's own segment: `ServiceMetrics.scoped`.)
    @Test func aRefreshWhoseSettleFailsCountsNoOutcomeAndOne503() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let directory = flow.fixture.path + "/metrics-test"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let segment = try MetricsSegment.open(path: MetricsSegment.path(directory: directory, name: "refresh"))
        let L = MetricsLayout.self
        let refreshIndex = try #require(L.endpoints.firstIndex(of: "refresh"))
        func count(_ status: Int) -> UInt64 { segment.load(L.requestSlot(endpoint: refreshIndex, status: status)!) }
        let ok = L.refreshOutcomeSlots + L.refreshOutcomes.firstIndex(of: "ok")!
        try ServiceMetrics.$scoped.withValue(segment) {
            var responder = ServiceResponder(endpoint: .refresh, context: flow.context, holdsAnswers: true)
            flow.context.faults.afterGroupAnswers = { throw StoreError(.io, "fsync: EIO") }
            let held = try #require(try refresh(&responder, flow, counter: 5).1)
            let settled = responder.settle(held.position)
            #expect(!settled)
            #expect(held.failure().status == 503)
            #expect(segment.load(ok) == 0, "a 503 counts no outcome")
            #expect(count(503) == 1 && count(200) == 0)
            #expect(L.refreshOutcomes.indices.allSatisfy { segment.load(L.refreshOutcomeSlots + $0) == 0 })

            flow.context.faults.afterGroupAnswers = nil
            let next = try #require(try refresh(&responder, flow, counter: 6).1)
            let settledNext = responder.settle(next.position)
            #expect(settledNext)
            #expect(segment.load(ok) == 0, "not counted before its answer leaves")
            #expect(next.final?().status == 200)
            next.released()
            #expect(segment.load(ok) == 1 && count(200) == 1)
        }
    }
}
