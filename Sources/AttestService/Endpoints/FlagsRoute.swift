import FastCGI

/// The flags pool's routes, by the request's path (`DOCUMENT_URI`; site.conf sends these
/// paths to `flags.sock`), each with its endpoint label in the log and the metrics.
///
/// ```
/// /api/v1/flags                       FlagsEndpoint.flags        flags
/// /.attestedge/flags-auth             FlagsStreamAuth.authorize  flags-stream-auth
/// /api/v1/whats-new                   WhatsNewEndpoint.list      whats-new
/// /api/v1/whats-new/<id>/seen         WhatsNewEndpoint.seen      whats-new-seen
/// /api/v1/org/flags…, /api/v1/org/flag-environments…            org-flags
/// /api/v1/org/release-notes…          FlagsAdminEndpoint.route   org-release-notes
/// /api/v1/org/flag-evaluation         FlagEvaluationEndpoint     org-flags
/// ```
enum FlagsRoute {
    case flags, streamAuth, whatsNew, whatsNewSeen, orgFlags, orgFlagEvaluation, orgReleaseNotes, unknown

    init(_ path: String) {
        switch path {
        case FlagsEndpoint.path: self = .flags
        case FlagsStreamAuth.path: self = .streamAuth
        case WhatsNewEndpoint.path: self = .whatsNew
        case FlagEvaluationEndpoint.path: self = .orgFlagEvaluation
        default:
            if path.hasPrefix(WhatsNewEndpoint.path + "/") {
                self = .whatsNewSeen
            } else if Self.under(path, "/api/v1/org/flags") || Self.under(path, "/api/v1/org/flag-environments") {
                self = .orgFlags
            } else if Self.under(path, "/api/v1/org/release-notes") {
                self = .orgReleaseNotes
            } else {
                self = .unknown
            }
        }
    }

    /// `path` is `base` or below it.
    static func under(_ path: String, _ base: String) -> Bool { path == base || path.hasPrefix(base + "/") }

    /// The endpoint label (`MetricsLayout.endpoints`).
    var logName: String {
        switch self {
        case .flags, .unknown: return "flags"
        case .streamAuth: return "flags-stream-auth"
        case .whatsNew: return "whats-new"
        case .whatsNewSeen: return "whats-new-seen"
        case .orgFlags, .orgFlagEvaluation: return "org-flags"
        case .orgReleaseNotes: return "org-release-notes"
        }
    }

    func answer(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        switch self {
        case .flags: return try FlagsEndpoint.flags(request, ctx)
        case .streamAuth: return try FlagsStreamAuth.authorize(request, ctx)
        case .whatsNew: return try WhatsNewEndpoint.list(request, ctx)
        case .whatsNewSeen: return try WhatsNewEndpoint.seen(request, ctx)
        case .orgFlags, .orgReleaseNotes: return try FlagsAdminEndpoint.route(request, ctx)
        case .orgFlagEvaluation: return try FlagEvaluationEndpoint.evaluate(request, ctx)
        case .unknown: throw ServiceError(.notFound, "No such path.", log: "path \(request.path.prefix(120))")
        }
    }
}
