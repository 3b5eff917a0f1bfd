import AttestCore
import AttestStore
import FastCGI

/// The endpoints, one executable each (`attest-<rawValue>`); `mad` serves heartbeat and the
/// usage API (monthly-active-device accounting), `webhooks` the webhook management API,
/// `monitor` the load balancers' `/healthz` and Prometheus's `/metrics` (on its own listener),
/// `flags` feature flags, the flag stream's auth, What's New and their org API, `feedback`
/// feature requests and support tickets, `org` the operator console's organization API
/// (devices, apps, API keys).
public enum Endpoint: String, Sendable, CaseIterable {
    case challenge, validate, refresh, mad, webhooks, monitor, flags, feedback, org

    /// The request path nginx routes to this endpoint.
    public var path: String {
        switch self {
        case .challenge: return "/api/v1/attestation/challenge"
        case .validate: return "/api/v1/attestation/validate"
        case .refresh: return "/api/v1/attestation/refresh"
        case .mad: return HeartbeatEndpoint.path
        case .webhooks: return WebhooksEndpoint.path
        case .monitor: return MonitorEndpoint.healthPath
        case .flags: return FlagsEndpoint.path
        case .feedback: return FeatureRequestsEndpoint.path
        case .org: return OrgDevicesEndpoint.path
        }
    }

    /// Answers `request` at once, waiting for what the answer depends on to be durable
    /// (`ServiceContext.respond`): what a responder that holds no answers, the tests and the
    /// in-process benchmark do.
    public func handle(_ request: Request, _ ctx: ServiceContext) -> Response {
        ctx.respond(request, endpoint: logName(request)) { scope in try answer(request, ctx, &scope) }
    }

    /// The endpoint's name in the log line of `request`.
    func logName(_ request: Request) -> String {
        switch self {
        case .challenge: return "challenge"
        case .validate: return "validate"
        case .refresh: return "refresh"
        case .mad: return request.path == UsageEndpoint.path ? "usage" : "heartbeat"
        case .webhooks: return "webhooks"
        case .monitor: return request.path == MonitorEndpoint.metricsPath ? "metrics" : "healthz"
        case .flags: return FlagsRoute(request.path).logName
        case .feedback: return FeedbackRoute(request.path).logName
        case .org: return OrgRoute(request.path).logName
        }
    }

    /// The endpoint's body: the answer, or the error its JSON envelope is built from.
    func answer(_ request: Request, _ ctx: ServiceContext, _ scope: inout RequestScope) throws -> Response {
        switch self {
        case .challenge: return try ChallengeEndpoint.challenge(request, ctx)
        case .validate: return try ValidateEndpoint.validate(request, ctx, &scope)
        case .refresh: return try RefreshEndpoint.refresh(request, ctx, &scope)
        case .mad:
            return request.path == UsageEndpoint.path
                ? try UsageEndpoint.usage(request, ctx) : try HeartbeatEndpoint.heartbeat(request, ctx)
        case .webhooks: return try WebhooksEndpoint.route(request, ctx)
        case .monitor: return try MonitorEndpoint.route(request, ctx)
        case .flags: return try FlagsRoute(request.path).answer(request, ctx)
        case .feedback: return try FeedbackRoute.answer(request, ctx)
        case .org: return try OrgRoute(request.path).answer(request, ctx)
        }
    }
}

/// A FastCGI responder serving one endpoint with a per-process `ServiceContext`.
///
/// With `holdsAnswers` (the pool workers), an answer that depends on a commit not yet on disk
/// (`store.sync = commit`) is returned with a `Deferral` on the transaction id it awaits; the
/// worker holds it while serving what is queued, sends it once `Store.isDurable` says so, and
/// calls `settle` (`Store.awaitDurable`: one `fdatasync` at most) before it would idle. A
/// failed sync turns every held answer into a 503. Without it, `respond` waits itself.
/// Validate's and refresh's final writes are grouped with those of the other answers held
/// (`GroupCommitter`, which this responder owns): committed together when the worker
/// settles, their answers built then.
public struct ServiceResponder: Responder {
    public let endpoint: Endpoint
    public let context: ServiceContext
    /// The group-commit queue and the answer last left unsettled; `nil` when answers are not held.
    let committer: GroupCommitter?

    public init(endpoint: Endpoint, context: ServiceContext, holdsAnswers: Bool = false) {
        self.endpoint = endpoint
        self.context = context
        committer = holdsAnswers ? GroupCommitter(context) : nil
    }

    public mutating func respond(to request: Request) -> Response {
        guard let committer else { return endpoint.handle(request, context) }
        let endpoint = endpoint, context = context
        return committer.respond(request, endpoint: endpoint.logName(request)) { scope in
            try endpoint.answer(request, context, &scope)
        }
    }

    /// Whether final durable writes are queued for the group's commit.
    var groupsWrites: Bool { committer?.groupsWrites ?? false }

    /// Validate and refresh workers prepare token signatures while nothing is queued.
    public var wantsIdle: Bool {
        switch endpoint {
        case .validate, .refresh:
            #if ATTEST_ABLATE
            return !Ablation.has("no-token")
            #else
            return true
            #endif
        case .challenge, .mad, .webhooks, .monitor, .flags, .feedback, .org: return false
        }
    }

    public mutating func idle() -> Bool { SigningKeys.prepareSignatures(context) }

    /// `server.maxHeldAnswers`.
    public var heldAnswerLimit: Int { context.configuration.maxHeldAnswers }

    public mutating func deferral() -> Deferral? {
        guard let committer, let held = committer.takeHeldAnswer() else { return nil }
        return Deferral(position: held.awaits, failure: {
            committer.failedToSettle(held, committer.settleFailure ?? StoreError(.io, "the durability sync failed"))
        }, released: { committer.released(held) }, final: held.grouped.map { grouped in
            { grouped.answer ?? committer.failedToSettle(held, StoreError(.io, "the group's commit built no answer")) }
        })
    }

    public mutating func isSettled(_ position: Int) -> Bool {
        // A grouped write's answer is settled only by the group's commit (`settle`).
        position != GroupCommitter.groupPosition && context.store.isDurable(position)
    }

    public mutating func settle(_ position: Int) -> Bool {
        do {
            if position == GroupCommitter.groupPosition {
                // Durable on return, and so is every earlier position held with it.
                try committer?.commitGroup()
            } else {
                try ServiceMetrics.awaitDurable(context.store, position)
            }
            return true
        } catch {
            committer?.settleFailure = error
            return false
        }
    }
}
