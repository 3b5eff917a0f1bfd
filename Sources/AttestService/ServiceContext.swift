import AttestCore
import AttestStore
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// Everything an endpoint needs, built once per worker process: configuration, the store,
/// the clock and randomness, the challenge key, the verifiers and the signing keys.
public final class ServiceContext {
    public let configuration: Configuration
    public let store: Store
    public let clock: any Clock
    public let random: any RandomSource
    public let challenges: ChallengeAuthority
    public let attestationVerifier: AttestationVerifier
    /// Verifies against the configured test roots only; `nil` when there are none.
    public let testRootVerifier: AttestationVerifier?
    public let keyRing: KeyRing
    /// Parsed device keys by keyId: a keyId is the hash of its key, so an entry never goes
    /// stale. At most `server.keyCacheEntries`; when full it starts again empty.
    var publicKeys: [[UInt8]: ECPublicKey] = [:]
    /// App lookups by App ID, with the durable version they were read at (see `appContext`).
    var appCache: [String: (version: Int, generation: UInt64, context: AppContext)] = [:]
    /// The last successful app lookup: the raw header values it was for, and its cache entry.
    var lastAppLookup: (bundle: String?, team: String?, version: Int, context: AppContext)?
    private var lastKeyCheck = Timestamp(seconds: 0)
    /// The current request's `X-RateLimit-*` headers, set where its buckets are charged
    /// (`Admission`) and added to whatever it answers. One request at a time per process.
    var rateHeaders: [Header] = []
    /// Ephemeral writes of device requests this process has made: every `sweepInterval`-th
    /// also sweeps (`sweepExpiredIfDue`).
    var ephemeralWrites = 0
    /// Countings of a device for the month this process has made that reached the sweep of
    /// past months: every `sweepInterval`-th also sweeps (`sweepCountedDevicesIfDue`).
    var usageCountings = 0
    /// A pool worker's context (`ServiceResponder(holdsAnswers: true)`): `respond` returns
    /// answers without waiting for their durability and leaves that wait to the worker,
    /// which holds them (`Responder.deferral`). Off: `respond` waits itself.
    var holdsAnswers = false
    /// The last answer `respond` returned unsettled, until the responder takes it.
    var heldAnswer: HeldAnswer?
    /// The current request's final durable write, queued by `durableWrite` (group commit).
    var queuedWrite: QueuedWrite?
    /// Queued writes of held answers, committed together by `commitGroup`.
    var writeGroup: [GroupedWrite] = []
    /// The heartbeat's token verifier and the key ids it was built from (see `tokenVerifier`).
    var tokenVerifierCache: (kids: [String], verifier: JWKSVerifier)?
    /// Heartbeat tokens whose signature verified in this process (`server.tokenCacheEntries`).
    lazy var verifiedTokens = VerifiedTokens(capacity: configuration.tokenCacheEntries)
    /// Where a heartbeat's reads went last time, by deviceId (`prefetchHeartbeat`; only where
    /// the store prefetches).
    var heartbeatHints = HeartbeatHints()
    /// Test-only failure injection (`FaultPoints`).
    public var faults = FaultPoints()
    /// Where diagnostics go (stderr in the executables; collected in tests). A `LogMessage`
    /// arrives with every interpolated value escaped: one call, one line.
    public var log: (LogMessage) -> Void = { _ in }

    public init(configuration: Configuration, store: Store, clock: any Clock, random: any RandomSource,
                challengeSecret: [UInt8], trustAnchors: [Certificate], testRoots: [Certificate] = [], keyRing: KeyRing) throws {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.random = random
        self.challenges = ChallengeAuthority(secret: challengeSecret)
        self.attestationVerifier = AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: trustAnchors))
        self.testRootVerifier = testRoots.isEmpty ? nil : AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: testRoots))
        self.keyRing = keyRing
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
                                         challengeSecret: data.challengeSecret(), trustAnchors: trust.hardware, testRoots: trust.test,
                                         keyRing: KeyRing(data))
        context.log = log
        if let notice = store.ephemeralResetNotice { log("\(notice)") }
        return context
    }

    /// Parsed public key of a stored device.
    func publicKey(for device: DeviceRecord) throws -> ECPublicKey {
        if let key = publicKeys[device.keyID] { return key }
        let key = try ECPublicKey(x962Point: device.publicKey)
        let capacity = configuration.keyCacheEntries
        guard capacity > 0 else { return key }
        if publicKeys.count >= capacity { publicKeys.removeAll(keepingCapacity: true) }
        publicKeys[device.keyID] = key
        return key
    }

    /// The token signer active at the clock's time (`KeyRing.signer(at:)`).
    func tokenSigner() throws -> JWTSigner {
        let now = clock.now()
        maintainKeys(at: now)
        return try keyRing.signer(at: now)
    }

    /// A quiet moment's step of token-signature preparation for the active key
    /// (`PreparedES256Signer`); whether more would help. No key, no work.
    func prepareTokenSignatures() -> Bool {
        (try? keyRing.signer(at: clock.now()))?.prepareAhead() ?? false
    }

    /// Once per clock second: rereads keys/index.json when `attestctl keys rotate` changed it
    /// and applies the key transitions due (`KeyRing.publish`: jwks.json, retired private
    /// keys). Failures are logged, not thrown: requests go on with the keys already read.
    func maintainKeys(at now: Timestamp) {
        guard now != lastKeyCheck else { return }
        lastKeyCheck = now
        do {
            try keyRing.reloadIfChanged()
            if try keyRing.publish(now: now) { log("keys: jwks.json and key files brought to \(now.iso8601)") }
        } catch {
            log("keys: \(error)")
        }
    }

    /// Runs an endpoint body, turning errors into the JSON envelope and logging them. With
    /// `store.sync = commit` the answer leaves only once everything it read or wrote in the
    /// durable store is on disk (`Store.deferringDurability`); a failed sync answers 503.
    ///
    /// Log lines (`server.requestLog`), one per request at most:
    /// `<endpoint> requestId=<id> status=<n> code=<code|-> us=<µs in the pool>[ detail="…"]`.
    func respond(_ request: Request, endpoint: String, _ body: () throws -> Response) -> Response {
        let started = Self.monotonicMicroseconds()
        queuedWrite = nil
        do {
            guard holdsAnswers else {
                let (response, line) = try store.deferringDurability { respondNow(request, endpoint: endpoint, started: started, body) }
                if let line { log(line.text(us: Self.monotonicMicroseconds() - started)) }
                return response
            }
            let ((response, line), awaits) = try store.deferringDurabilityUnsettled { respondNow(request, endpoint: endpoint, started: started, body) }
            if let grouped = groupQueuedWrite(request, endpoint: endpoint, placeholder: response) {
                // Answered once the group's commit is durable (`commitGroup`).
                heldAnswer = HeldAnswer(awaits: Self.groupPosition, requestID: request.requestID, endpoint: endpoint, started: started,
                                        line: nil, grouped: grouped)
            } else if awaits > 0 {
                // Logged when the answer leaves (`released`), or replaced by the 503's line.
                heldAnswer = HeldAnswer(awaits: awaits, requestID: request.requestID, endpoint: endpoint, started: started, line: line, grouped: nil)
            } else {
                heldAnswer = nil
                if let line { log(line.text(us: Self.monotonicMicroseconds() - started)) }
            }
            return response
        } catch {
            return failedAfterAnswer(error, endpoint: endpoint, requestID: request.requestID, started: started)
        }
    }

    /// The answer, and its log line when one is due (every failure; a success with
    /// `server.requestLog = all`); `respond` writes the line once the answer can leave.
    private func respondNow(_ request: Request, endpoint: String, started: Int64, _ body: () throws -> Response) -> (Response, RequestLogLine?) {
        maintainKeys(at: clock.now())
        rateHeaders = []
        defer { rateHeaders = [] }
        var threw = true
        let answered = finished(endpoint: endpoint, requestID: request.requestID, headers: { self.rateHeaders }) {
            let response = try body()
            threw = false
            return response
        }
        // A request that failed after queueing its final write must not have it committed.
        if threw { queuedWrite = nil }
        return answered
    }

    /// `body`'s answer, or its error as the JSON envelope, with `headers()` (the request's rate
    /// limit headers, read after `body`) added; and the log line due for it, if any.
    func finished(endpoint: String, requestID: String, headers: () -> [Header], _ body: () throws -> Response) -> (Response, RequestLogLine?) {
        do {
            var response = try body()
            response.headers += headers()
            let line = logsEveryRequest ? RequestLogLine(endpoint: endpoint, requestID: requestID, status: response.status, code: "-", detail: "") : nil
            return (response, line)
        } catch {
            let failure = ServiceError.unexpected(error)
            let line = RequestLogLine(endpoint: endpoint, requestID: requestID, status: failure.status, code: failure.code.rawValue, detail: failure.logDetail)
            var response = Self.errorResponse(failure, requestID: requestID)
            // A 429 carries its own X-RateLimit-* headers; any other answer the request's.
            if !failure.headers.contains(where: { $0.0 == "X-RateLimit-Limit" }) { response.headers += headers() }
            return (response, line)
        }
    }

    /// One request's log line: `<endpoint> requestId=<id> status=<n> code=<code|-> us=<µs>[ detail="…"]`.
    struct RequestLogLine {
        let endpoint: String, requestID: String, status: Int, code: String, detail: String

        /// Built by interpolation, so every value is escaped (`LogMessage`).
        func text(us: Int64) -> LogMessage {
            detail.isEmpty
                ? "\(endpoint) requestId=\(requestID) status=\(status) code=\(code) us=\(us)"
                : "\(endpoint) requestId=\(requestID) status=\(status) code=\(code) us=\(us) detail=\"\(detail)\""
        }
    }

    /// An answer `respond` left for the worker to hold (`holdsAnswers`): the durable position
    /// it awaits, what a 503 in its place needs, and its own log line, if any.
    struct HeldAnswer {
        let awaits: Int
        let requestID: String
        let endpoint: String
        let started: Int64
        let line: RequestLogLine?
        /// Set when the answer is built by the group's commit (`commitGroup`).
        let grouped: GroupedWrite?
    }

    /// Writes a held answer's log line once it leaves (`us` then counts the wait).
    func released(_ held: HeldAnswer) {
        if let line = held.grouped?.line ?? held.line { log(line.text(us: Self.monotonicMicroseconds() - held.started)) }
    }

    /// The 503 sent instead of a held answer whose durability failed, logged as `respond`
    /// logs its failures (the line the answer would have had is not written).
    func failedToSettle(_ held: HeldAnswer, _ error: any Error) -> Response {
        failedAfterAnswer(error, endpoint: held.endpoint, requestID: held.requestID, started: held.started)
    }

    /// The 503 (logged) that replaces an answer built but not sendable: its durability failed.
    private func failedAfterAnswer(_ error: any Error, endpoint: String, requestID: String, started: Int64) -> Response {
        let failure = ServiceError.unexpected(error)
        log(RequestLogLine(endpoint: endpoint, requestID: requestID, status: failure.status, code: failure.code.rawValue, detail: failure.logDetail)
            .text(us: Self.monotonicMicroseconds() - started))
        return Self.errorResponse(failure, requestID: requestID)
    }

    var logsEveryRequest: Bool { configuration.requestLog == .all }

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
