import AttestCore
import AttestStore
import FastCGI

/// The endpoints, one executable each (`attest-<rawValue>`); `mad` serves heartbeat and the
/// usage API (monthly-active-device accounting), `webhooks` the webhook management API.
public enum Endpoint: String, Sendable, CaseIterable {
    case challenge, validate, refresh, mad, webhooks

    /// The request path nginx routes to this endpoint.
    public var path: String {
        switch self {
        case .challenge: return "/api/v1/attestation/challenge"
        case .validate: return "/api/v1/attestation/validate"
        case .refresh: return "/api/v1/attestation/refresh"
        case .mad: return HeartbeatEndpoint.path
        case .webhooks: return WebhooksEndpoint.path
        }
    }

    public func handle(_ request: Request, _ ctx: ServiceContext) -> Response {
        switch self {
        case .challenge: return ChallengeEndpoint.handle(request, ctx)
        case .validate: return ValidateEndpoint.handle(request, ctx)
        case .refresh: return RefreshEndpoint.handle(request, ctx)
        case .mad: return request.path == UsageEndpoint.path ? UsageEndpoint.handle(request, ctx) : HeartbeatEndpoint.handle(request, ctx)
        case .webhooks: return WebhooksEndpoint.handle(request, ctx)
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
/// (`GroupCommit`): committed together when the worker settles, their answers built then.
public struct ServiceResponder: Responder {
    public let endpoint: Endpoint
    public let context: ServiceContext
    /// The error of the last failed `settle`, which the held answers' 503s report.
    private let settleFailure = SettleFailure()

    public init(endpoint: Endpoint, context: ServiceContext, holdsAnswers: Bool = false) {
        self.endpoint = endpoint
        self.context = context
        context.holdsAnswers = holdsAnswers
    }

    public mutating func respond(to request: Request) -> Response {
        endpoint.handle(request, context)
    }

    /// Validate and refresh workers prepare token signatures while nothing is queued.
    public var wantsIdle: Bool {
        switch endpoint {
        case .validate, .refresh: return true
        case .challenge, .mad, .webhooks: return false
        }
    }

    public mutating func idle() -> Bool { context.prepareTokenSignatures() }

    /// `server.maxHeldAnswers`.
    public var heldAnswerLimit: Int { context.configuration.maxHeldAnswers }

    public mutating func deferral() -> Deferral? {
        guard let held = context.heldAnswer else { return nil }
        context.heldAnswer = nil
        let context = context, failed = settleFailure
        return Deferral(position: held.awaits, failure: {
            context.failedToSettle(held, failed.error ?? StoreError(.io, "the durability sync failed"))
        }, released: { context.released(held) }, final: held.grouped.map { grouped in
            { grouped.answer ?? context.failedToSettle(held, StoreError(.io, "the group's commit built no answer")) }
        })
    }

    public mutating func isSettled(_ position: Int) -> Bool {
        // A grouped write's answer is settled only by the group's commit (`settle`).
        position != ServiceContext.groupPosition && context.store.isDurable(position)
    }

    public mutating func settle(_ position: Int) -> Bool {
        do {
            if position == ServiceContext.groupPosition {
                // Durable on return, and so is every earlier position held with it.
                try context.commitGroup()
            } else {
                try context.store.awaitDurable(position)
            }
            return true
        } catch {
            settleFailure.error = error
            return false
        }
    }

    private final class SettleFailure { var error: (any Error)? }
}
