import AttestCore
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
public struct ServiceResponder: Responder {
    public let endpoint: Endpoint
    public let context: ServiceContext

    public init(endpoint: Endpoint, context: ServiceContext) {
        self.endpoint = endpoint
        self.context = context
    }

    public mutating func respond(to request: Request) -> Response {
        endpoint.handle(request, context)
    }
}
