import AttestConfig
import AttestCore
import AttestService
import AttestStore
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// Sends one attempt. One instance per sender thread (it may keep a connection open).
public protocol WebhookTransport: AnyObject {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AttemptResult
}

/// The delivery loop (`attest-webhooks deliver`): the main thread does every store
/// transaction, `webhooks.maxConcurrentDeliveries` threads do the HTTP, and no transaction is
/// open while a request is in flight. At most `webhooks.concurrencyPerEndpoint` attempts go to
/// one endpoint at a time, so a slow endpoint holds up only its own deliveries.
///
/// Each turn: fan out new outbox events, hand due jobs to idle threads, wait up to
/// `pollMilliseconds` for results (longer while there is nothing to do, see
/// `idleMilliseconds`), record the results that arrived in one transaction.
public final class DeliveryWorker {
    let queue: DeliveryQueue
    let clock: any Clock
    let threads: Int
    let perEndpoint: Int
    let perOrganization: Int
    let timeoutSeconds: Int
    let pollMilliseconds: Int
    let pool: SenderPool
    var inFlight = [[UInt8]: (endpoint: String, organization: String)]()  // by delivery key
    /// Attempts that finished but are not recorded yet (`collect`), with when they arrived.
    private var unrecorded = [(results: [(DeliveryJob, AttemptResult)], at: Timestamp)]()
    /// Where `due`'s scan behind a long backlog goes on from (`DeliveryQueue.due`).
    private var dueResume: [UInt8]?
    /// Test hook: runs before each recording transaction; throwing makes that recording fail.
    public var beforeRecord: (() throws -> Void)?
    public var log: (LogMessage) -> Void = { _ in }
    /// Totals since start, for logs and benchmarks.
    public private(set) var attempts = 0, delivered = 0, pruned = 0
    let retentionDays: Int
    private var lastPrune: Timestamp?

    public init(store: Store, configuration: Configuration, clock: any Clock = SystemClock(),
                pollMilliseconds: Int = 50, transport: @escaping @Sendable () -> any WebhookTransport) {
        queue = DeliveryQueue(store: store, retrySchedule: configuration.webhookRetrySchedule,
                              storedQuota: configuration.webhookStoredDeliveriesPerOrganization)
        self.clock = clock
        threads = configuration.webhookMaxConcurrentDeliveries
        perEndpoint = configuration.webhookConcurrencyPerEndpoint
        perOrganization = configuration.webhookConcurrencyPerOrganization
        timeoutSeconds = configuration.webhookTimeoutSeconds
        retentionDays = configuration.webhookLogRetentionDays
        self.pollMilliseconds = pollMilliseconds
        pool = SenderPool(threads: threads, timeoutSeconds: timeoutSeconds, transport: transport)
    }

    /// A turn that finds nothing to do doubles the next turn's wait, up to this: an idle
    /// deliverer makes 2 turns a second, not 20. Any work sets it back to `pollMilliseconds`.
    /// The cost: the first event after a quiet spell (or a retry that falls due then) waits
    /// up to this long before its attempt.
    public static let idleMilliseconds = 500

    /// Runs turns until `shouldStop` says so, then waits for the attempts in flight (at most
    /// the timeout) and records them.
    public func run(shouldStop: () -> Bool) {
        var wait = pollMilliseconds
        while !shouldStop() {
            do {
                let busy = try turn(waitMilliseconds: wait)
                wait = busy ? pollMilliseconds : min(wait * 2, max(pollMilliseconds, Self.idleMilliseconds))
            } catch {
                log("deliver: \(error)")
                usleep(500_000)
            }
        }
        let deadline = monotonicNanoseconds() + (timeoutSeconds + 1) * 1_000_000_000
        while !inFlight.isEmpty && monotonicNanoseconds() < deadline {
            _ = try? collect(waitMilliseconds: 100)
        }
        pool.shutdown()
    }

    /// One turn of the loop, waiting up to `waitMilliseconds` (default `pollMilliseconds`) for
    /// results; whether it found anything to do (events to fan out, jobs due, attempts in
    /// flight or finished).
    @discardableResult
    public func turn(waitMilliseconds: Int? = nil) throws -> Bool {
        let now = clock.now()
        let pruned = try pruneIfDue(now)
        let (fanned, dropped) = try queue.fanOutReporting(limit: 512, now: now)
        for (org, n) in dropped.sorted(by: { $0.key < $1.key }) {
            log("""
                deliver: organization \(org) stores webhooks.storedDeliveriesPerOrganization \
                (\(queue.storedQuota)) deliveries: \(n) not stored
                """)
        }
        var submitted = 0
        let free = threads - inFlight.count
        if free > 0 {
            var counts = [String: Int](), orgCounts = [String: Int]()
            for job in inFlight.values {
                counts[job.endpoint, default: 0] += 1
                orgCounts[job.organization, default: 0] += 1
            }
            let jobs = try queue.due(now: now, limit: free, busy: Set(inFlight.keys), perEndpoint: counts,
                                     endpointLimit: perEndpoint, perOrganization: orgCounts,
                                     organizationLimit: perOrganization,
                                     leaseSeconds: timeoutSeconds + 5, resume: &dueResume)
            for job in jobs {
                inFlight[job.key] = (job.endpointID, job.organization)
                pool.submit(job)
            }
            submitted = jobs.count
        }
        let collected = try collect(waitMilliseconds: waitMilliseconds ?? pollMilliseconds)
        return pruned || fanned > 0 || submitted > 0 || collected > 0 || !inFlight.isEmpty
    }

    /// The delivery log's retention: once a minute (and at the first turn) removes a batch of
    /// finished deliveries older than `webhooks.logRetentionDays`; while batches come back
    /// full, on every turn, so the removal keeps up with any rate of events. Whether it
    /// removed a full batch.
    private func pruneIfDue(_ now: Timestamp) throws -> Bool {
        guard retentionDays > 0, lastPrune.map({ now.seconds - $0.seconds >= 60 }) ?? true else { return false }
        let removed = try queue.prune(createdBefore: now - Int64(retentionDays) * 86_400, limit: Self.pruneBatch)
        pruned += removed
        let full = removed >= Self.pruneBatch
        lastPrune = full ? nil : now
        return full
    }

    /// Deliveries one pruning removes at most (one write transaction).
    public static let pruneBatch = 1_000

    /// Records the results that arrive within `waitMilliseconds`; how many.
    ///
    /// Results whose recording failed (the store unreachable or full) are kept, with the time
    /// they arrived, and recorded first by the next call, without waiting: until then their
    /// jobs stay in flight, so they neither free a sender slot nor can be leased again by this
    /// process. Dropping them would lose their slots for good and strand their deliveries
    /// until a restart.
    @discardableResult
    private func collect(waitMilliseconds: Int) throws -> Int {
        let arrived = pool.results(waitMilliseconds: unrecorded.isEmpty ? waitMilliseconds : 0)
        if !arrived.isEmpty { unrecorded.append((arrived, clock.now())) }
        var count = 0
        while let (results, at) = unrecorded.first {
            try beforeRecord?()
            delivered += try queue.record(results, at: at)
            unrecorded.removeFirst()
            attempts += results.count
            count += results.count
            for (job, result) in results {
                inFlight[job.key] = nil
                ServiceMetrics.webhookAttempt(status: result.status, failed: !result.error.isEmpty)
                if !result.succeeded {
                    log("""
                        deliver: \(job.endpointID) dlv_\(job.sequence) status=\(result.status) \
                        error=\"\(result.error)\"
                        """)
                }
            }
        }
        return count
    }
}
