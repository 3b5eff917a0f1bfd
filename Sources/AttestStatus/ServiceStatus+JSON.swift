import AttestCore

extension ServiceStatus {
    /// `attestctl status --json`: one object, members in this order (docs/cli.md):
    ///
    ///     url            the metrics URL scraped
    ///     seconds        the interval the rates are over, measured between the two scrapes
    ///     hostTime       attestedge_time_seconds of the second scrape (ISO 8601, UTC), or null
    ///     pools          [{pool, workers, workerRestarts, requestsPerSecond, p99Seconds,
    ///                      p99AboveLargestBucket, serverErrorsPerSecond, clientErrorsPerSecond}]
    ///     stores         [{environment, usedBytes, mapSizeBytes, percent}]
    ///     webhooks       {backlog, attemptsPerSecond, failuresPerSecond, failedAttempts}
    ///     organizations  [{org, activeDevices, limit, percent}]
    ///
    /// Unknown or unlimited numbers are null: `workers` of a pool with no gauge, `p99Seconds`
    /// without requests in the interval, `percent` of a map of size 0, `limit` and `percent`
    /// of an organization without a limit. Numbers are not rounded.
    public func json(url: String) -> JSONValue {
        func number(_ value: Double?) -> JSONValue {
            guard let value, value.isFinite else { return .null }
            return .double(value)
        }
        let time: JSONValue = hostTime.isFinite && abs(hostTime) < 1e12
            ? .string(Timestamp(seconds: Int64(hostTime.rounded(.down))).iso8601) : .null
        return .object([
            ("url", .string(url)),
            ("seconds", number(seconds)),
            ("hostTime", time),
            ("pools", .array(pools.map { pool in
                .object([
                    ("pool", .string(pool.name)),
                    ("workers", number(pool.workers)),
                    ("workerRestarts", number(pool.workerRestarts)),
                    ("requestsPerSecond", number(pool.requestsPerSecond)),
                    ("p99Seconds", number(pool.p99?.value)),
                    ("p99AboveLargestBucket", .bool(pool.p99?.isLowerBound ?? false)),
                    ("serverErrorsPerSecond", number(pool.serverErrorsPerSecond)),
                    ("clientErrorsPerSecond", number(pool.clientErrorsPerSecond)),
                ])
            })),
            ("stores", .array(stores.map { store in
                .object([
                    ("environment", .string(store.environment)),
                    ("usedBytes", number(store.usedBytes)),
                    ("mapSizeBytes", number(store.sizeBytes)),
                    ("percent", number(store.percent)),
                ])
            })),
            ("webhooks", .object([
                ("backlog", number(webhooks.backlog)),
                ("attemptsPerSecond", number(webhooks.attemptsPerSecond)),
                ("failuresPerSecond", number(webhooks.failuresPerSecond)),
                ("failedAttempts", number(webhooks.failedAttempts)),
            ])),
            ("organizations", .array(organizations.map { org in
                .object([
                    ("org", .string(org.name)),
                    ("activeDevices", number(org.activeDevices)),
                    ("limit", number(org.limit)),
                    ("percent", number(org.percent)),
                ])
            })),
        ])
    }
}
