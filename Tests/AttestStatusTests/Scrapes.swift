@testable import AttestStatus

/// Two synthetic answers of `GET /metrics`, two seconds apart, written in the format and with the
/// names of issue 39's metric-name contract (HELP and TYPE lines, the contract's buckets), and
/// what `attestctl status` must compute from them. Every expected number is worked out by hand
/// in the comments.
enum Scrapes {
    static let bounds = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"]

    /// One histogram series in the contract's buckets: `cumulative` has one count per bound.
    static func duration(pool: String, endpoint: String, cumulative: [Int]) -> String {
        precondition(cumulative.count == bounds.count)
        let labels = "pool=\"\(pool)\",endpoint=\"\(endpoint)\""
        return zip(bounds, cumulative)
            .map { "attestedge_request_duration_seconds_bucket{\(labels),le=\"\($0)\"} \($1)" }
            .joined(separator: "\n")
            + "\nattestedge_request_duration_seconds_sum{\(labels)} 1.5"
            + "\nattestedge_request_duration_seconds_count{\(labels)} \(cumulative.last!)"
    }

    static func exposition(time: Int, requests: [(String, String, String, Int)], durations: [String],
                           workers: [(String, Int)], restarts: [(String, Int)], attempts: [(String, Int)],
                           backlog: Int, organizations: [(String, Int, Int)]) -> String {
        """
        # HELP attestedge_requests_total Answers by pool, endpoint and HTTP status.
        # TYPE attestedge_requests_total counter
        \(requests.map { "attestedge_requests_total{pool=\"\($0.0)\",endpoint=\"\($0.1)\",status=\"\($0.2)\"} \($0.3)" }
            .joined(separator: "\n"))
        # HELP attestedge_request_duration_seconds Time from the request's arrival to its answer.
        # TYPE attestedge_request_duration_seconds histogram
        \(durations.joined(separator: "\n"))
        # HELP attestedge_refresh_outcomes_total Refreshes by outcome.
        # TYPE attestedge_refresh_outcomes_total counter
        attestedge_refresh_outcomes_total{outcome="ok"} 900
        # HELP attestedge_pool_workers Workers running.
        # TYPE attestedge_pool_workers gauge
        \(workers.map { "attestedge_pool_workers{pool=\"\($0.0)\"} \($0.1)" }.joined(separator: "\n"))
        # HELP attestedge_pool_worker_restarts_total Workers restarted since the pool's master started.
        # TYPE attestedge_pool_worker_restarts_total counter
        \(restarts.map { "attestedge_pool_worker_restarts_total{pool=\"\($0.0)\"} \($0.1)" }.joined(separator: "\n"))
        # HELP attestedge_store_map_used_bytes LMDB map in use.
        # TYPE attestedge_store_map_used_bytes gauge
        attestedge_store_map_used_bytes{environment="durable"} 104857600
        attestedge_store_map_used_bytes{environment="ephemeral"} 16777216
        # HELP attestedge_store_map_size_bytes LMDB map size.
        # TYPE attestedge_store_map_size_bytes gauge
        attestedge_store_map_size_bytes{environment="durable"} 1073741824
        attestedge_store_map_size_bytes{environment="ephemeral"} 67108864
        # HELP attestedge_webhook_backlog Webhook events waiting to be sent.
        # TYPE attestedge_webhook_backlog gauge
        attestedge_webhook_backlog \(backlog)
        # HELP attestedge_webhook_attempts_total Webhook delivery attempts by answer class.
        # TYPE attestedge_webhook_attempts_total counter
        \(attempts.map { "attestedge_webhook_attempts_total{class=\"\($0.0)\"} \($0.1)" }.joined(separator: "\n"))
        # HELP attestedge_monthly_active_devices This month's active devices.
        # TYPE attestedge_monthly_active_devices gauge
        \(organizations.map { "attestedge_monthly_active_devices{org=\"\($0.0)\"} \($0.1)" }.joined(separator: "\n"))
        # HELP attestedge_monthly_active_devices_limit The organization's limit (0: none).
        # TYPE attestedge_monthly_active_devices_limit gauge
        \(organizations.map { "attestedge_monthly_active_devices_limit{org=\"\($0.0)\"} \($0.2)" }
            .joined(separator: "\n"))
        # HELP attestedge_time_seconds The host's clock.
        # TYPE attestedge_time_seconds gauge
        attestedge_time_seconds \(time)

        """
    }

    static let quotedOrg = #"a \"quoted\" org"#

    /// t = 0.
    static let earlier = exposition(
        time: 1_796_000_000,
        requests: [("refresh", "refresh", "200", 1000), ("refresh", "refresh", "409", 10),
                   ("refresh", "refresh", "503", 2), ("challenge", "challenge", "200", 5000),
                   ("mad", "heartbeat", "200", 40), ("mad", "usage", "200", 1)],
        durations: [
            duration(pool: "refresh", endpoint: "refresh",
                     cumulative: [100, 300, 500, 600, 700, 700, 700, 700, 700, 700, 700, 700]),
            duration(pool: "challenge", endpoint: "challenge", cumulative: Array(repeating: 5000, count: 12)),
            duration(pool: "mad", endpoint: "heartbeat", cumulative: Array(repeating: 40, count: 12)),
            duration(pool: "mad", endpoint: "usage", cumulative: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        ],
        workers: [("challenge", 2), ("mad", 2), ("monitor", 1), ("refresh", 4), ("webhooks", 1)],
        restarts: [("challenge", 0), ("mad", 0), ("monitor", 0), ("refresh", 2), ("webhooks", 0)],
        attempts: [("2xx", 100), ("5xx", 10), ("error", 5)],
        backlog: 3,
        organizations: [("acme", 240, 1000), ("beta", 7, 0), (quotedOrg, 3, 4)])

    /// t = 2 s.
    static let later = exposition(
        time: 1_796_000_002,
        requests: [("refresh", "refresh", "200", 1196),    // +196
                   ("refresh", "refresh", "409", 12),      // +2
                   ("refresh", "refresh", "503", 4),       // +2
                   ("refresh", "refresh", "400", 2),       // new: +2
                   ("challenge", "challenge", "200", 30),  // reset (5000 → 30): +30
                   ("mad", "heartbeat", "200", 140),       // +100
                   ("mad", "usage", "200", 3),             // +2
                   ("monitor", "metrics", "200", 1)],      // new: +1
        durations: [
            // +392 between 0.1 and 0.25 s, +8 between 0.5 and 1 s: 400 new observations.
            duration(pool: "refresh", endpoint: "refresh",
                     cumulative: [100, 300, 500, 600, 700, 700, 700, 1092, 1092, 1100, 1100, 1100]),
            // reset: 30 new observations, all under 1 ms.
            duration(pool: "challenge", endpoint: "challenge", cumulative: Array(repeating: 30, count: 12)),
            // +100 heartbeats under 1 ms; +2 usage reports over 2.5 s.
            duration(pool: "mad", endpoint: "heartbeat", cumulative: Array(repeating: 140, count: 12)),
            duration(pool: "mad", endpoint: "usage", cumulative: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]),
        ],
        workers: [("challenge", 2), ("mad", 2), ("monitor", 1), ("refresh", 4), ("webhooks", 1)],
        restarts: [("challenge", 0), ("mad", 0), ("monitor", 0), ("refresh", 3), ("webhooks", 0)],
        attempts: [("2xx", 110), ("5xx", 14), ("error", 5), ("4xx", 2)],  // +10, +4, +0, new +2
        backlog: 7,
        organizations: [("acme", 250, 1000), ("beta", 7, 0), (quotedOrg, 3, 4)])

    static func status() throws -> ServiceStatus {
        try ServiceStatus(earlier: ScrapedMetrics(prometheusText: earlier),
                          later: ScrapedMetrics(prometheusText: later), seconds: 2)
    }
}
