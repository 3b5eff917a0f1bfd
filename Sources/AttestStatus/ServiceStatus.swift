/// What `attestctl status` shows: the service's numbers from two scrapes of its `GET /metrics`
/// taken `seconds` apart. Rates are the counters' increase over that interval (a counter that
/// went down started over: its new value is the increase; a series new in the second scrape
/// counted from 0); gauges are the second scrape's.
///
/// The families read are the metric-name contract of issue 39 (`Family`): `attestedge_time_seconds`
/// and `attestedge_pool_workers` must be in the answer (else it is not AttestEdge's, or from a
/// build before metrics); the others count as empty when absent (a PostgreSQL store has no map).
public struct ServiceStatus: Sendable, Equatable {
    /// One pool (`attest-ENDPOINT`, label `pool`).
    public struct Pool: Sendable, Equatable {
        public var name: String
        /// `attestedge_pool_workers`: running now.
        public var workers: Double?
        /// `attestedge_pool_worker_restarts_total`: since the pool's master started.
        public var workerRestarts: Double
        /// All of the pool's answers per second (`attestedge_requests_total`).
        public var requestsPerSecond: Double
        /// 5xx answers per second.
        public var serverErrorsPerSecond: Double
        /// 4xx answers per second (refusals: bad input, rate limits, replays).
        public var clientErrorsPerSecond: Double
        /// The 99th percentile of the interval's request durations, over all the pool's endpoints
        /// (`attestedge_request_duration_seconds`); nil without requests.
        public var p99: HistogramQuantile?
    }

    /// One LMDB environment's map (`durable`, `ephemeral`).
    public struct StoreMap: Sendable, Equatable {
        public var environment: String
        public var usedBytes: Double
        public var sizeBytes: Double
        /// used / size × 100; nil for a size of 0.
        public var percent: Double?
    }

    public struct Webhooks: Sendable, Equatable {
        /// `attestedge_webhook_backlog`: events waiting to be sent.
        public var backlog: Double
        /// Delivery attempts per second, any outcome.
        public var attemptsPerSecond: Double
        /// Attempts per second that got no 2xx (3xx, 4xx, 5xx or no answer: the sender follows
        /// no redirect).
        public var failuresPerSecond: Double
        /// Failed attempts since the sender started.
        public var failedAttempts: Double
    }

    /// One organization's month (`attestedge_monthly_active_devices{org}`).
    public struct Organization: Sendable, Equatable {
        public var name: String
        public var activeDevices: Double
        /// `attestedge_monthly_active_devices_limit`; nil when 0 (unlimited) or absent.
        public var limit: Double?
        /// active / limit × 100; nil when unlimited.
        public var percent: Double?
    }

    /// The interval the rates are over.
    public var seconds: Double
    /// `attestedge_time_seconds` of the second scrape: the host's clock when it answered.
    public var hostTime: Double
    public var pools: [Pool]
    public var stores: [StoreMap]
    public var webhooks: Webhooks
    public var organizations: [Organization]

    /// The families read, with the type the contract gives each.
    enum Family: String, CaseIterable {
        case requests = "attestedge_requests_total"
        case duration = "attestedge_request_duration_seconds"
        case workers = "attestedge_pool_workers"
        case restarts = "attestedge_pool_worker_restarts_total"
        case mapUsed = "attestedge_store_map_used_bytes"
        case mapSize = "attestedge_store_map_size_bytes"
        case backlog = "attestedge_webhook_backlog"
        case attempts = "attestedge_webhook_attempts_total"
        case activeDevices = "attestedge_monthly_active_devices"
        case deviceLimit = "attestedge_monthly_active_devices_limit"
        case time = "attestedge_time_seconds"

        var type: ScrapedMetrics.MetricType {
            switch self {
            case .requests, .restarts, .attempts: .counter
            case .duration: .histogram
            case .workers, .mapUsed, .mapSize, .backlog, .activeDevices, .deviceLimit, .time: .gauge
            }
        }

        /// Without it the answer is not AttestEdge's metrics.
        var isRequired: Bool { self == .time || self == .workers }
    }

    /// Computes the status from the `earlier` and `later` scrape, `seconds` (> 0) apart.
    /// Throws `missingFamily` or `familyType` when `later` breaks the contract.
    public init(earlier: ScrapedMetrics, later: ScrapedMetrics, seconds: Double) throws(StatusFailure) {
        let missing = Family.allCases.filter { $0.isRequired && later.family($0.rawValue) == nil }.map(\.rawValue)
        guard missing.isEmpty else {
            throw StatusFailure(.missingFamily, "the answer has no \(missing.joined(separator: ", ")): it is not "
                                    + "AttestEdge's metrics, or from a release without them")
        }
        for family in Family.allCases {
            guard let found = later.family(family.rawValue) else { continue }
            guard found.type == family.type || found.type == .untyped else {
                throw StatusFailure(.familyType, "\(family.rawValue) is a \(found.type.rawValue), "
                                        + "not the \(family.type.rawValue) AttestEdge exposes")
            }
        }
        guard seconds > 0, seconds.isFinite else {
            throw StatusFailure(.answer, "the two scrapes must be apart in time (got \(seconds) s)")
        }
        let rates = CounterIncrease(earlier: earlier, later: later)
        /// The later scrape's samples of a family: gauges as they are, counters since their start.
        func current(_ family: Family) -> [ScrapedMetrics.Sample] { later.samples(family.rawValue) }
        func perSecond(_ family: Family, where keep: ([String: String]) -> Bool) -> Double {
            rates.sum(family.rawValue, where: keep) / seconds
        }
        self.seconds = seconds
        hostTime = current(.time).first?.value ?? .nan

        let poolNames = Set((current(.workers) + current(.requests)).compactMap { $0.labels["pool"] })
        pools = poolNames.sorted().map { name in
            let workers = current(.workers).filter { $0.labels["pool"] == name }.map(\.value)
            let status = { (prefix: Character) in
                perSecond(.requests) { $0["pool"] == name && $0["status"]?.count == 3 && $0["status"]?.first == prefix }
            }
            var buckets = [Double: Double]()  // by bound: "0.1" and "0.10" are one bucket
            let deltas = rates.byLabel(Family.duration.rawValue + "_bucket", "le") { $0["pool"] == name }
            for (le, count) in deltas {
                if let bound = PrometheusTextParser.value(le) { buckets[bound, default: 0] += count }
            }
            return Pool(name: name, workers: workers.isEmpty ? nil : workers.reduce(0, +),
                        workerRestarts: current(.restarts).filter { $0.labels["pool"] == name }.map(\.value)
                            .reduce(0, +),
                        requestsPerSecond: perSecond(.requests) { $0["pool"] == name },
                        serverErrorsPerSecond: status("5"), clientErrorsPerSecond: status("4"),
                        p99: HistogramQuantile(0.99, buckets: buckets.map { (upperBound: $0.key, count: $0.value) }))
        }

        stores = current(.mapUsed).compactMap { used -> StoreMap? in
            guard let environment = used.labels["environment"] else { return nil }
            let size = current(.mapSize).first { $0.labels["environment"] == environment }?.value ?? 0
            return StoreMap(environment: environment, usedBytes: used.value, sizeBytes: size,
                            percent: size > 0 ? used.value / size * 100 : nil)
        }.sorted { $0.environment < $1.environment }

        let failed = { (labels: [String: String]) in labels["class"] != "2xx" }
        webhooks = Webhooks(backlog: current(.backlog).map(\.value).reduce(0, +),
                            attemptsPerSecond: perSecond(.attempts) { _ in true },
                            failuresPerSecond: perSecond(.attempts, where: failed),
                            failedAttempts: current(.attempts).filter { failed($0.labels) }.map(\.value).reduce(0, +))

        organizations = current(.activeDevices).compactMap { active -> Organization? in
            guard let name = active.labels["org"] else { return nil }
            let limit = current(.deviceLimit).first { $0.labels["org"] == name }.map(\.value)
                .flatMap { $0 > 0 ? $0 : nil }
            return Organization(name: name, activeDevices: active.value, limit: limit,
                                percent: limit.map { active.value / $0 * 100 })
        }.sorted { $0.name < $1.name }
    }
}
