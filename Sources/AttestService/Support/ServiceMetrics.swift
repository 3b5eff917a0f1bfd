import AttestMetrics
import AttestStore

/// This process's metrics segment (`MetricsSegment`, one per pool: the master opens it before
/// it forks, the workers inherit it) and what the service records in it. Without a segment
/// (tests, benchmarks, `attestctl`, a segment that could not be made) every call is a no-op.
/// Each pool is one single-threaded process per worker; the webhook sender's threads only
/// return results to its main thread, which records them.
package enum ServiceMetrics {
    nonisolated(unsafe) package static var segment: MetricsSegment?
    /// A segment one task counts into instead of `segment` (`$scoped.withValue`): an in-process
    /// test's own, so that the tests running beside it in the process count elsewhere.
    @TaskLocal package static var scoped: MetricsSegment?
    /// Where this request's counts go: the task's `scoped` segment, else the process's.
    static var current: MetricsSegment? { scoped ?? segment }
    /// `RUN/metrics`, where the monitor pool reads every segment; `nil` outside the pools.
    nonisolated(unsafe) package static var directory: String?
    /// The segment files the monitor reads: each pool's, then the webhook sender's.
    package static let senderName = "deliver"
    /// attest-receipts' segment.
    package static let receiptsName = "receipts"
    package static var segmentNames: [(name: String, isPool: Bool)] {
        Endpoint.allCases.map { ($0.rawValue, true) } + [(senderName, false), (receiptsName, false)]
    }

    /// Opens (or replaces, see `MetricsSegment`) the segment `name` in `RUN/metrics` and makes
    /// it this process's; a segment that cannot be made is logged and the process runs without.
    @discardableResult
    package static func start(run: String, name: String, log: (String) -> Void) -> MetricsSegment? {
        do {
            let directory = try MetricsSegment.directory(run: run)
            Self.directory = directory
            let segment = try MetricsSegment.open(path: MetricsSegment.path(directory: directory, name: name))
            if let why = segment.replaced { log("metrics: replaced \(segment.path) (\(why))") }
            Self.segment = segment
            return segment
        } catch {
            log("metrics: running without metrics: \(error)")
            return nil
        }
    }

    /// Every segment in `directory` as it is now; missing or foreign ones are left out.
    package static func snapshots() -> [MetricsSnapshot] {
        guard let directory else { return [] }
        return segmentNames.compactMap { name, isPool in
            MetricsSegment.read(path: MetricsSegment.path(directory: directory, name: name)).map {
                MetricsSnapshot(name: name, isPool: isPool, slots: $0)
            }
        }
    }

    /// One answer leaving: `endpoint` is its log name, `started` its `RequestScope.started`.
    static func request(endpoint: String, status: Int, started: Int64) {
        guard let segment = current, let index = MetricsLayout.endpoints.firstIndex(of: endpoint) else { return }
        let elapsed = ServiceContext.monotonicMicroseconds() - started
        segment.recordRequest(endpoint: index, status: status, microseconds: UInt64(max(0, elapsed)))
        if index == flagStreamAuthIndex { segment.recordFlagStreamAuth(status: status) }
    }

    /// The stream auth's endpoint (`FlagsRoute.streamAuth`): its answers also count by outcome,
    /// once each, with the status that left the pool (a 503 after the answer included).
    static let flagStreamAuthIndex = MetricsLayout.endpoints.firstIndex(of: FlagsRoute.streamAuth.logName)

    /// One publish to the flag stream (`NchanPublisher.publish`): 2xx or not.
    static func flagPublish(ok: Bool) { current?.recordFlagPublish(ok: ok) }

    static func verificationFailure(step: String) { current?.recordVerificationFailure(step: step) }

    /// A refresh's outcome, as its answer leaves (`ServiceContext.refreshOutcome`); `nil`: none.
    static func refreshOutcome(_ outcome: String?) {
        if let outcome { current?.recordRefreshOutcome(outcome) }
    }

    /// Validate's check of an attestation's receipt: `valid`, `invalid` or `absent`.
    static func receiptVerification(_ result: String) { current?.recordReceiptVerification(result) }

    static func rateLimited(bucket: String) { current?.recordRateLimited(bucket: bucket) }

    static func groupCommit(writes: Int) { current?.recordGroupCommit(writes: writes) }

    package static func webhookAttempt(status: Int, failed: Bool) {
        current?.recordWebhookAttempt(status: failed ? 0 : status)
    }

    /// One redemption with Apple (`RedemptionOutcome.metricLabel`).
    package static func receiptRedemption(status: String) { current?.recordReceiptRedemption(status: status) }

    /// `store.awaitDurable(position)`, timed when it has to wait (the position not yet durable).
    static func awaitDurable(_ store: Store, _ position: Int) throws {
        guard let segment = current, !store.isDurable(position) else { return try store.awaitDurable(position) }
        let started = ServiceContext.monotonicMicroseconds()
        try store.awaitDurable(position)
        segment.recordSync(microseconds: UInt64(max(0, ServiceContext.monotonicMicroseconds() - started)))
    }
}
