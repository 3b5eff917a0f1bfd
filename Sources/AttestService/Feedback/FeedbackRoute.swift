import FastCGI

/// The feedback pool's routes (site.conf sends `/api/v1/feedback/` and `/api/v1/support/` to
/// `feedback.sock`), each with its endpoint label in the log and the metrics:
///
/// ```
/// /api/v1/feedback/features[/<id>]       FeatureRequestsEndpoint   feature-requests
/// /api/v1/feedback/features/<id>/vote    FeatureRequestsEndpoint   feature-votes
/// /api/v1/feedback/features/<id>/comments FeatureRequestsEndpoint  feature-comments
/// /api/v1/support/tickets[/<id>]         TicketsEndpoint           tickets
/// /api/v1/support/tickets/<id>/messages  TicketsEndpoint           ticket-messages
/// /api/v1/org/feedback…                  FeedbackAdminEndpoint     org-feedback
/// /api/v1/org/tickets…                   FeedbackAdminEndpoint     org-tickets
/// ```
/// Anything else under those prefixes is 404 (labelled `feature-requests` or `tickets`).
enum FeedbackRoute {
    case requests, votes, comments, tickets, messages, orgFeedback, orgTickets

    init(_ path: String) {
        if FlagsRoute.under(path, FeedbackAdminEndpoint.feedbackPath) {
            self = .orgFeedback
        } else if FlagsRoute.under(path, FeedbackAdminEndpoint.ticketsPath) {
            self = .orgTickets
        } else if FlagsRoute.under(path, TicketsEndpoint.path) || FlagsRoute.under(path, "/api/v1/support") {
            self = path.hasSuffix("/messages") ? .messages : .tickets
        } else if path.hasSuffix("/vote") {
            self = .votes
        } else if path.hasSuffix("/comments") {
            self = .comments
        } else {
            self = .requests
        }
    }

    /// The endpoint label (`MetricsLayout.endpoints`).
    var logName: String {
        switch self {
        case .requests: return "feature-requests"
        case .votes: return "feature-votes"
        case .comments: return "feature-comments"
        case .tickets: return "tickets"
        case .messages: return "ticket-messages"
        case .orgFeedback: return "org-feedback"
        case .orgTickets: return "org-tickets"
        }
    }

    static func answer(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        if FlagsRoute.under(request.path, FeedbackAdminEndpoint.feedbackPath)
            || FlagsRoute.under(request.path, FeedbackAdminEndpoint.ticketsPath) {
            return try FeedbackAdminEndpoint.route(request, ctx)
        }
        if FlagsRoute.under(request.path, TicketsEndpoint.path) { return try TicketsEndpoint.route(request, ctx) }
        if FlagsRoute.under(request.path, FeatureRequestsEndpoint.path) {
            return try FeatureRequestsEndpoint.route(request, ctx)
        }
        throw ServiceError(.notFound, "No such path.", log: "path \(request.path.prefix(120))")
    }
}
