import AttestCore

/// What one run of the health checks found, and when: a worker answers every `/healthz` of
/// the same clock second with it (`HealthEndpoint.cacheSeconds`).
///
/// ```
/// 200 {"status":"ok"}
/// 503 {"status":"fail","failing":["store_map","pool_refresh"]}   names from HealthCheck, in its order
/// ```
struct HealthVerdict: Equatable, Sendable {
    /// The checks that failed, in `HealthCheck.all`'s order; empty when all passed.
    let failing: [HealthCheck]
    /// The clock's time when the checks ran.
    let checkedAt: Timestamp

    var status: Int { failing.isEmpty ? 200 : 503 }

    /// The JSON answer: only the fixed check names, nothing a tenant or the store said.
    var body: String {
        guard !failing.isEmpty else { return #"{"status":"ok"}"# }
        return #"{"status":"fail","failing":["# + failing.map { "\"\($0.name)\"" }.joined(separator: ",") + "]}"
    }
}
