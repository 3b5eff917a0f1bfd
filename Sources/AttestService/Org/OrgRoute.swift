import FastCGI

/// The org pool's routes (site.conf sends these paths to `org.sock`), each with its endpoint
/// label in the log and the metrics:
///
/// ```
/// /api/v1/org/devices…        OrgDevicesEndpoint   org-devices
/// /api/v1/org/apps…           OrgAppsEndpoint      org-apps
/// /api/v1/org/api-keys…       OrgAPIKeysEndpoint   org-api-keys
/// /api/v1/org/audit           AuditEndpoint        org-audit
/// /api/v1/console/session     ConsoleSessionEndpoint console-session
/// ```
/// Anything else is 404 (labelled `org-devices`).
enum OrgRoute {
    case devices, apps, apiKeys, audit, consoleSession

    static let auditPath = AuditEndpoint.path
    static let consoleSessionPath = ConsoleSessionEndpoint.path

    init(_ path: String) {
        if FlagsRoute.under(path, OrgAppsEndpoint.path) {
            self = .apps
        } else if FlagsRoute.under(path, OrgAPIKeysEndpoint.path) {
            self = .apiKeys
        } else if path == Self.auditPath {
            self = .audit
        } else if path == Self.consoleSessionPath {
            self = .consoleSession
        } else {
            self = .devices
        }
    }

    /// The endpoint label (`MetricsLayout.endpoints`).
    var logName: String {
        switch self {
        case .devices: return "org-devices"
        case .apps: return "org-apps"
        case .apiKeys: return "org-api-keys"
        case .audit: return "org-audit"
        case .consoleSession: return "console-session"
        }
    }

    func answer(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        switch self {
        case .devices:
            guard FlagsRoute.under(request.path, OrgDevicesEndpoint.path) else { throw Self.noSuchPath(request) }
            return try OrgDevicesEndpoint.route(request, ctx)
        case .apps: return try OrgAppsEndpoint.route(request, ctx)
        case .apiKeys: return try OrgAPIKeysEndpoint.route(request, ctx)
        case .audit: return try AuditEndpoint.route(request, ctx)
        case .consoleSession: return try ConsoleSessionEndpoint.route(request, ctx)
        }
    }

    static func noSuchPath(_ request: Request) -> ServiceError {
        ServiceError(.notFound, "No such path.", log: "path \(request.path.prefix(120))")
    }
}
