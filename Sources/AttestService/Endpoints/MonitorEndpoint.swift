import FastCGI

/// The monitor pool (`attest-monitor`): what watches the service rather than uses it.
///
/// - `GET /healthz` on the main site: the load balancers' check (`HealthEndpoint`).
/// - `GET /metrics` on the metrics listener only (`server.metricsListen`, loopback by default):
///   Prometheus's text format (`MetricsEndpoint`). The main site has no `/metrics` location.
///
/// Neither answer names a tenant, a device or a key.
enum MonitorEndpoint {
    static let healthPath = "/healthz"
    static let metricsPath = "/metrics"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        guard request.method == "GET" || request.method == "HEAD" else {
            throw ServiceError(.methodNotAllowed, "Use GET.")
        }
        switch request.path {
        case healthPath: return HealthEndpoint.health(request, ctx)
        case metricsPath: return MetricsEndpoint.metrics(request, ctx)
        default: throw ServiceError(.notFound, "No such monitor path.")
        }
    }
}
