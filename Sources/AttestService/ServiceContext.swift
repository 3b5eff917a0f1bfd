import AttestConfig
import AttestCore
import AttestStore
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// A worker's environment, built once per process and never changed: configuration, the
/// store, the clock and randomness, the challenge key, the verifiers, the signing keys and the
/// log. What a worker learns as it serves lives beside it in `caches` (`WorkerCaches`); what
/// one request carries, in its `RequestScope`; the group-commit queue, in the pool worker's
/// responder (`GroupCommitter`). The features endpoints use are small types over it
/// (`Admission`, `AppLookup`, `MonthlyCounter`, `RiskAssessor`, `TokenIssuer`, ...).
public final class ServiceContext {
    public let configuration: Configuration
    public let store: Store
    public let clock: any Clock
    public let random: any RandomSource
    public let challenges: ChallengeAuthority
    public let attestationVerifier: AttestationVerifier
    /// Verifies against the configured test roots only; `nil` when there are none.
    public let testRootVerifier: AttestationVerifier?
    /// Verifies attestation receipts against Apple Root CA - G3 (tests substitute their own
    /// receipt root); its signing chain is cached for the worker's life (`ReceiptVerifier`).
    public let receiptVerifier: ReceiptVerifier
    /// One per test receipt root (`trust.testReceiptRoots`): only for test-root devices.
    public let testReceiptVerifiers: [ReceiptVerifier]
    public let keyRing: KeyRing
    /// Where diagnostics go (stderr in the executables; collected in tests). A `LogMessage`
    /// arrives with every interpolated value escaped: one call, one line.
    public let log: (LogMessage) -> Void
    /// Test-only failure injection (`FaultPoints`).
    public let faults: FaultPoints
    /// Where the pools' unix sockets are: the directory of this pool's own socket (set by
    /// `ServiceMain`). `/healthz` probes the other pools there (`HealthCheck.pool`); `nil` in
    /// process (tests, benchmarks), where there are no pools to probe.
    var poolSockets: String?
    /// `RUN/metrics`, where each pool's counters are (`ServiceMetrics.directory`, set by
    /// `ServiceMain`): a pool whose segment says 0 workers is down (`PoolProbe.problem`).
    var metricsDirectory: String?
    /// The refresh outcome (`MetricsLayout.refreshOutcomes`) the request being answered reached,
    /// set by `RefreshEndpoint` and taken by whatever sends or holds its answer
    /// (`takeRefreshOutcome`): counted when that answer leaves, never for a 503 sent in its place.
    var refreshOutcome: String?
    /// What this worker has learnt while serving (parsed keys, apps, verified tokens, ...).
    let caches: WorkerCaches

    public init(configuration: Configuration, store: Store, clock: any Clock, random: any RandomSource,
                challengeSecret: [UInt8], trustAnchors: [Certificate], testRoots: [Certificate] = [],
                receiptAnchor: Certificate? = nil, testReceiptRoots: [Certificate] = [], keyRing: KeyRing,
                log: @escaping (LogMessage) -> Void = { _ in }, faults: FaultPoints = FaultPoints()) throws {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.random = random
        self.challenges = ChallengeAuthority(secret: challengeSecret)
        self.attestationVerifier = AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: trustAnchors))
        self.testRootVerifier = testRoots.isEmpty
            ? nil : AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: testRoots))
        receiptVerifier = try receiptAnchor.map { try ReceiptVerifier(anchor: $0) } ?? ReceiptVerifier.apple()
        testReceiptVerifiers = try testReceiptRoots.map { try ReceiptVerifier(anchor: $0) }
        self.keyRing = keyRing
        self.log = log
        self.faults = faults
        self.caches = WorkerCaches(configuration)
    }

    /// Opens a data directory the way the executables do: its configuration, store, secret
    /// and keys, trusting `trust` (see `TrustAnchors.load`).
    public static func open(dataDirectory data: DataDirectory, trust: TrustAnchors, clock: any Clock = SystemClock(),
                            random: any RandomSource = SystemRandom(), log: @escaping (LogMessage) -> Void,
                            adjust: (inout Configuration) -> Void = { _ in }) throws -> ServiceContext {
        var configuration = try data.loadConfiguration()
        adjust(&configuration)
        let store = try Store(directory: data.storeDirectory, options: configuration.storeOptions)
        let context = try ServiceContext(configuration: configuration, store: store, clock: clock, random: random,
                                         challengeSecret: data.challengeSecret(), trustAnchors: trust.hardware,
                                         testRoots: trust.test, testReceiptRoots: trust.testReceipt,
                                         keyRing: KeyRing(data), log: log)
        if let notice = store.ephemeralResetNotice { log("\(notice)") }
        return context
    }

    /// Runs an endpoint body and waits for what its answer depends on before returning it:
    /// with `store.sync = commit` the answer leaves only once everything it read or wrote in
    /// the durable store is on disk (`Store.deferringDurability`); a failed sync answers 503.
    /// (A pool worker's responder holds such answers instead: `GroupCommitter.respond`.)
    func respond(_ request: Request, endpoint: String, _ body: (inout RequestScope) throws -> Response) -> Response {
        var scope = RequestScope(request, endpoint: endpoint, groupsWrites: false)
        _ = takeRefreshOutcome()
        do {
            let (response, line) = try store.deferringDurability { answer(&scope, body) }
            if let line { log(line.text(us: Self.monotonicMicroseconds() - scope.started)) }
            ServiceMetrics.request(endpoint: endpoint, status: response.status, started: scope.started)
            ServiceMetrics.refreshOutcome(takeRefreshOutcome())
            return response
        } catch {
            _ = takeRefreshOutcome()
            return failedAfterAnswer(error, scope.requestID, endpoint: endpoint, started: scope.started)
        }
    }

    /// `refreshOutcome`, cleared.
    func takeRefreshOutcome() -> String? {
        defer { refreshOutcome = nil }
        return refreshOutcome
    }

    /// The body's answer (its error as the JSON envelope) with the request's rate-limit
    /// headers, and its log line when one is due; `respond` writes the line once the answer
    /// can leave. A body that failed after queueing its final write leaves nothing queued.
    func answer(_ scope: inout RequestScope,
                _ body: (inout RequestScope) throws -> Response) -> (Response, RequestLogLine?) {
        SigningKeys.maintain(at: clock.now(), self)
        let result = Result { try body(&scope) }
        if case .failure = result { scope.queuedWrite = nil }
        return finished(result, endpoint: scope.endpoint, requestID: scope.requestID, headers: scope.rateHeaders)
    }

    /// `result` as the answer, or its error as the JSON envelope, with `headers` (the request's
    /// rate limit headers) added; and the log line due for it, if any (every failure; a success
    /// with `server.requestLog = all`).
    func finished(_ result: Result<Response, any Error>, endpoint: String, requestID: String,
                  headers: [Header]) -> (Response, RequestLogLine?) {
        switch result {
        case .success(var response):
            response.headers += headers
            let line = logsEveryRequest ? RequestLogLine(endpoint: endpoint, requestID: requestID,
                                                         status: response.status, code: "-", detail: "") : nil
            return (response, line)
        case .failure(let error):
            let failure = ServiceError.unexpected(error)
            let line = RequestLogLine(endpoint: endpoint, requestID: requestID, status: failure.status,
                                      code: failure.code.rawValue, detail: failure.logDetail)
            var response = Self.errorResponse(failure, requestID: requestID)
            // A 429 carries its own X-RateLimit-* headers; any other answer the request's.
            if !failure.headers.contains(where: { $0.0 == "X-RateLimit-Limit" }) { response.headers += headers }
            return (response, line)
        }
    }

    /// The 503 (logged) that replaces an answer built but not sendable: its durability failed.
    func failedAfterAnswer(_ error: any Error, _ requestID: String, endpoint: String, started: Int64) -> Response {
        let failure = ServiceError.unexpected(error)
        let line = RequestLogLine(endpoint: endpoint, requestID: requestID, status: failure.status,
                                  code: failure.code.rawValue, detail: failure.logDetail)
        log(line.text(us: Self.monotonicMicroseconds() - started))
        ServiceMetrics.request(endpoint: endpoint, status: failure.status, started: started)
        return Self.errorResponse(failure, requestID: requestID)
    }

    var logsEveryRequest: Bool { configuration.requestLog == .all }

    /// Counts the synthetic devices `bench-<i>` for `i` in `range` as devices of `appID`, in
    /// write transactions of `batch` each, through the same admission code as requests
    /// (`attest-bench usage`). Returns how many were admitted.
    public func countSyntheticDevices(org: OrgRecord, appID: String, range: Range<Int>, batch: Int,
                                      now: Timestamp) throws -> Int {
        var admitted = 0
        var start = range.lowerBound
        while start < range.upperBound {
            let end = min(range.upperBound, start + batch)
            admitted += try store.write([.durable]) { txn in
                var n = 0
                for i in start..<end {
                    let identity = UsageIdentity.device(appID: appID, fingerprint: "", deviceID: "bench-\(i)")
                    let admission = try MonthlyCounter.countActive(identity, appID: appID, org: org, in: txn,
                                                                   now: now, self)
                    if admission == .admitted { n += 1 }
                }
                return n
            }
            start = end
        }
        return admitted
    }

    static func monotonicMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    static func errorResponse(_ failure: ServiceError, requestID: String) -> Response {
        .json(failure.status, failure.body(requestID: requestID).jsonText,
              headers: [Header("Cache-Control", "no-store")] + failure.headers.map { Header($0.0, $0.1) })
    }

    static func json(_ value: JSONValue) -> Response {
        .json(200, value.jsonText, headers: [Header("Cache-Control", "no-store")])
    }
}
