import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Testing

/// A pool worker's responder (`holdsAnswers`): in `store.sync = commit` an answer that depends
/// on a commit not yet on disk comes back with a `Deferral` on that commit, and leaves only
/// once `isSettled` or `settle` says it is durable.
@Suite struct HeldAnswerTests {
    private func respond(_ responder: inout ServiceResponder, _ flow: DeviceFlow, _ endpoint: Endpoint,
                         body: JSONValue?) -> Response {
        responder.respond(to: Fixture.request(body == nil ? "GET" : "POST", endpoint.path, body: body?.jsonText,
                                              headers: Fixture.appHeaders))
    }

    @Test func theWorkerHoldsAsManyAnswersAsConfigured() throws {
        #expect(ServiceResponder(endpoint: .refresh, context: try DeviceFlow().context,
                                 holdsAnswers: true).heldAnswerLimit == 32)
        let flow = try DeviceFlow { $0.maxHeldAnswers = 3 }
        #expect(ServiceResponder(endpoint: .refresh, context: flow.context, holdsAnswers: true).heldAnswerLimit == 3)
    }

    @Test func onlyTokenIssuingWorkersAskForQuietMoments() throws {
        let flow = try DeviceFlow()
        let asking = Endpoint.allCases.filter { ServiceResponder(endpoint: $0, context: flow.context).wantsIdle }
        #expect(asking == [.validate, .refresh], "they prepare token signatures; the others have nothing to do")
        var refresh = ServiceResponder(endpoint: .refresh, context: flow.context)
        let moreWouldHelp = refresh.idle()
        #expect(moreWouldHelp, "a quiet moment prepares a step of nonces for the active key, and more would help")
    }

    /// An enrollment's write waits for the group's commit (`GroupCommitter`; LMDB and PostgreSQL
    /// alike): the answer is held at the group position, and built once that commit is durable.
    @Test func anEnrollmentIsHeldUntilItsCommitIsDurable() throws {
        let flow = try DeviceFlow()
        var responder = ServiceResponder(endpoint: .validate, context: flow.context, holdsAnswers: true)
        let body = try flow.validateBody(challenge: try flow.fixture.challenge())
        let response = respond(&responder, flow, .validate, body: body)
        #expect(response.status == 200)
        let deferral = responder.deferral()
        let held = try #require(deferral, "the device's write is queued for the group")
        #expect(held.position == GroupCommitter.groupPosition)
        let again = responder.deferral()
        #expect(again == nil, "taken once")
        let settledBefore = responder.isSettled(held.position)
        #expect(!settledBefore)
        #expect(try flow.storedDevice() == nil, "not written before the worker settles")
        let settled = responder.settle(held.position)
        #expect(settled)
        #expect(try flow.storedDevice() != nil)
        #expect(flow.context.store.isDurable(flow.context.store.durableVersion))
        let answer = try #require(held.final?())
        #expect(answer.status == 200)
        #expect(try JSONParser.parse(answer.body)["isValid"]?.boolValue == true)
    }

    @Test func aChallengeIsNeverHeld() throws {
        let flow = try DeviceFlow()
        var responder = ServiceResponder(endpoint: .challenge, context: flow.context, holdsAnswers: true)
        let status = respond(&responder, flow, .challenge, body: nil).status
        let deferral = responder.deferral()
        #expect(status == 200)
        #expect(deferral == nil, "a challenge depends on nothing durable")
    }

    @Test func withoutHoldingTheResponderWaitsItself() throws {
        let flow = try DeviceFlow()
        var responder = ServiceResponder(endpoint: .validate, context: flow.context)
        let before = flow.context.store.durabilitySyncs
        let body = try flow.validateBody(challenge: try flow.fixture.challenge())
        let status = respond(&responder, flow, .validate, body: body).status
        let deferral = responder.deferral()
        #expect(status == 200)
        #expect(deferral == nil)
        if !Fixture.onPostgres {
            #expect(flow.context.store.durabilitySyncs == before + 1, "respond synced before returning")
        }
    }

    @Test func aHeldFailureIsA503WithTheRequestID() throws {
        let flow = try DeviceFlow()
        var responder = ServiceResponder(endpoint: .validate, context: flow.context, holdsAnswers: true)
        let body = try flow.validateBody(challenge: try flow.fixture.challenge())
        _ = respond(&responder, flow, .validate, body: body)
        let deferral = responder.deferral()
        let held = try #require(deferral)
        let failure = held.failure()
        #expect(failure.status == 503)
        let parsed = try JSONParser.parse(failure.body)
        #expect(parsed["requestId"]?.stringValue == "req-1")
        #expect(flow.fixture.logs.contains { $0.contains("validate requestId=req-1 status=503") })
    }

    /// With `server.requestLog = all`, a held answer logs one line: its own when it leaves, or
    /// the 503's that replaced it (never both).
    @Test func aHeldAnswerLogsOneLineWhenItLeaves() throws {
        let flow = try DeviceFlow(configure: { $0.requestLog = .all })
        var responder = ServiceResponder(endpoint: .validate, context: flow.context, holdsAnswers: true)
        _ = try flow.fixture.challenge()
        let before = flow.fixture.logs.count
        _ = respond(&responder, flow, .validate, body: try flow.validateBody(challenge: try flow.fixture.challenge()))
        let deferral = responder.deferral()
        let sent = try #require(deferral)
        #expect(flow.fixture.logs.count == before + 1, "the challenge's line only: the answer has not left")
        let settled = responder.settle(sent.position)
        #expect(settled && sent.final?().status == 200)
        #expect(flow.fixture.logs.count == before + 1, "logged when it leaves, not when built")
        sent.released()
        #expect(flow.fixture.logs.count == before + 2)
        #expect(flow.fixture.logs.last?.hasPrefix("validate requestId=req-1 status=200 code=- us=") == true)

        let second = try DeviceFlow(configure: { $0.requestLog = .all })
        var other = ServiceResponder(endpoint: .validate, context: second.context, holdsAnswers: true)
        _ = respond(&other, second, .validate, body: try second.validateBody(challenge: try second.fixture.challenge()))
        let otherDeferral = other.deferral()
        let failed = try #require(otherDeferral)
        _ = failed.failure()
        let lines = second.fixture.logs.filter { $0.hasPrefix("validate ") }
        #expect(lines.count == 1 && lines[0].contains("status=503"), "\(lines)")
    }
}
