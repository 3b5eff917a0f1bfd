import AttestConfig
import AttestCore
import AttestService
import AttestStore
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// The redemption loop of `attest-receipts`: takes the receipts due (`Transaction.dueReceipts`),
/// sends each to Apple with its team's provider token, and records what came back
/// (`RedemptionOutcome`, `RedemptionSchedule`). One request at a time, spaced by the global
/// cap (`receipts.requestsPerSecond`); no transaction is open while a request is in flight.
///
/// Before asking Apple, a due receipt is put off without a request (to now + interval) when its
/// device is not active or not seen within `receipts.seenWithinDays`, its App ID has no team,
/// the team has no DeviceCheck key, or a 401 stopped the team; a receipt that failed
/// verification or has expired is never sent (its due entry goes).
public final class ReceiptRedeemer {
    public typealias KeyLookup = (_ team: String) throws -> DeviceCheckKey?
    /// Stores a receipt Apple answered (verified) for device key `keyID` in the open write
    /// transaction, with `next`, its next redemption: `AppleRiskMetric.record` (the receipt, the
    /// device's metric and history, the threshold webhook; `recorder(_:)`).
    public typealias Redeemed = (_ receipt: AppAttestReceipt, _ raw: [UInt8], _ keyID: [UInt8], _ at: Timestamp,
                                 _ next: Timestamp?, _ txn: Transaction) throws -> Void

    let store: Store
    let clock: any Clock
    let schedule: RedemptionSchedule
    let baseURL: String
    let authorizationPrefix: String
    let timeoutSeconds: Int
    let transport: any AppleTransport
    let keys: KeyLookup
    let verifiers: ReceiptVerifiers
    let jitter: () -> Double
    let storeRedeemed: Redeemed
    private var pacer: RequestPacer
    private var tokens = [String: ProviderToken]()
    /// How `lastOutcome` starts for a receipt put off without a request (`resume` looks for it).
    static let putOff = "put off: "
    /// Due receipts read per turn.
    public static let batch = 64
    public var log: (LogMessage) -> Void = { _ in }
    /// Test hook and the executable's stop flag: checked before each request.
    public var shouldStop: () -> Bool = { false }
    /// Totals since start, for the log.
    public private(set) var attempts = 0, redeemed = 0, deferred = 0

    public init(store: Store, configuration: Configuration, clock: any Clock = SystemClock(),
                transport: any AppleTransport, keys: @escaping KeyLookup, verifiers: ReceiptVerifiers,
                jitter: @escaping () -> Double = { Double.random(in: 0..<1) }, timeoutSeconds: Int = 30,
                storeRedeemed: @escaping Redeemed) {
        self.store = store
        self.clock = clock
        schedule = configuration.receiptSchedule
        baseURL = configuration.receiptAppleURL
        authorizationPrefix = configuration.receiptAuthorizationPrefix
        pacer = RequestPacer(requestsPerSecond: configuration.receiptRequestsPerSecond)
        self.timeoutSeconds = timeoutSeconds
        self.transport = transport
        self.keys = keys
        self.verifiers = verifiers
        self.jitter = jitter
        self.storeRedeemed = storeRedeemed
    }

    /// Runs turns until `shouldStop`; a turn with nothing due sleeps up to a second (in steps
    /// of 100 ms, so a stop is seen soon). A request in flight is finished and recorded.
    public func run() {
        while !shouldStop() {
            var handled = 0
            do { handled = try turn() } catch { log("receipts: \(String(describing: error))") }
            if handled == 0 { for _ in 0..<10 where !shouldStop() { usleep(100_000) } }
        }
    }

    /// After Apple's 429: no request before this time, for any receipt (`turn` returns 0 until
    /// then). A throttled redeemer that went on with the rest of its turn would keep hitting
    /// Apple at the full rate, and the receipts it backs off would come back together.
    public private(set) var pausedUntil: Timestamp?

    /// Handles the receipts due now (at most `batch`); returns how many changed state (sent,
    /// put off, dropped, a stale queue entry removed). A receipt that fails (a team's key that
    /// no longer loads, a record that does not decode) is logged and put off, never holding up
    /// the receipts behind it.
    @discardableResult
    public func turn() throws -> Int {
        if let pausedUntil, clock.now() < pausedUntil { return 0 }
        let now = clock.now()
        let due = try store.read { try $0.dueReceipts(at: now, limit: Self.batch) }
        var handled = 0
        for (at, keyID) in due where !shouldStop() {
            if let pausedUntil, clock.now() < pausedUntil { break }
            do {
                if try handle(due: at, keyID: keyID) { handled += 1 }
            } catch {
                log("receipts: \(Hex.encode(keyID.prefix(8))): \(String(describing: error)); put off")
                if (try? handleDeferred(keyID: keyID, why: "failed: \(String(describing: error))")) != nil {
                    handled += 1
                }
            }
        }
        return handled
    }

    /// What one due receipt needs: put off, dropped, sent, or nothing (another redeemer has it).
    enum Plan {
        case drop(String), defer_(String), send(ReceiptRecord, DeviceRecord, team: String), claimedElsewhere, stale
    }

    /// How long past the request's timeout a claimed receipt stays claimed: a redeemer that
    /// dies with a request in flight leaves it due again at the end of its claim.
    static let claimMarginSeconds: Int64 = 60

    /// Decides in a write transaction, and for a receipt to send claims it there: its next
    /// redemption moves past the request's timeout (`claimMarginSeconds`). Redeemers on other
    /// hosts of a shared PostgreSQL store then find it no longer due at `due` (serializable
    /// transactions: of two claims one is retried and sees the other's), so Apple gets one
    /// request per due receipt, never one per host.
    /// Returns whether anything changed (false: another redeemer has it).
    @discardableResult
    func handle(due: Timestamp, keyID: [UInt8]) throws -> Bool {
        let now = clock.now()
        let lease = now + Int64(timeoutSeconds) + Self.claimMarginSeconds
        let dueKey = BigEndian.bytes(due.seconds) + keyID
        let plan: Plan = try store.write { txn in
            guard let record = try txn.receiptRecord(keyID: keyID), let device = try txn.device(keyID: keyID) else {
                return .drop("no receipt or device")
            }
            guard record.nextRedeemAt == due else {
                // Claimed by another redeemer since it was listed (the claim moved its entry),
                // or a stale entry (the inconsistency `store check` names): that one goes,
                // or every turn would read it again.
                guard try txn.get(.receiptDue, dueKey) != nil else { return .claimedElsewhere }
                _ = try txn.delete(.receiptDue, dueKey)
                return .stale
            }
            let plan = try self.plan(record, device, now: now, txn: txn)
            var changed = record
            switch plan {
            case .send:
                changed.nextRedeemAt = lease
            case .defer_(let why):
                changed.nextRedeemAt = schedule.deferred(at: now, expiresAt: record.expiresAt)
                changed.lastOutcome = Self.putOff + why
            default:
                return plan
            }
            try txn.put(changed, keyID: keyID, previousDue: record.nextRedeemAt)
            return plan
        }
        switch plan {
        case .claimedElsewhere:
            return false
        case .stale:
            log("receipts: \(Hex.encode(keyID.prefix(8))): a stale queue entry removed (due \(due.iso8601))")
        case .drop(let why):
            try store.write { txn in
                if var record = try txn.receiptRecord(keyID: keyID) {
                    let previous = record.nextRedeemAt
                    record.nextRedeemAt = nil
                    record.lastOutcome = "not redeemed: \(why)"
                    try txn.put(record, keyID: keyID, previousDue: previous)
                }
                _ = try txn.delete(.receiptDue, BigEndian.bytes(due.seconds) + keyID)
            }
        case .defer_:
            deferred += 1  // put off in the transaction that decided it
        case .send(let record, let device, let team):
            try send(record, device, team: team, keyID: keyID)
        }
        return true
    }

    func plan(_ record: ReceiptRecord, _ device: DeviceRecord, now: Timestamp, txn: Transaction) throws -> Plan {
        if record.check == .invalid { return .drop("the stored receipt did not verify") }
        if let expires = record.expiresAt, expires <= now { return .drop("the receipt expired") }
        guard device.status == .active else { return .defer_("the device is \(device.status.name)") }
        guard schedule.isRecent(lastSeen: device.lastSeenAt, at: now) else {
            return .defer_("device not seen since \(device.lastSeenAt.iso8601)")
        }
        guard let team = DeviceCheckKey.teamID(ofAppID: device.appID) else { return .defer_("no team in the App ID") }
        if let stopped = try txn.appleTeam(team), stopped.stoppedAt != nil {
            return .defer_("team \(team) stopped: \(stopped.stopReason)")
        }
        let key: DeviceCheckKey?
        do { key = try keys(team) } catch {
            return .defer_("the DeviceCheck key of team \(team) does not load: \(String(describing: error))")
        }
        guard key != nil else { return .defer_("no DeviceCheck key for team \(team)") }
        return .send(record, device, team: team)
    }

    func send(_ record: ReceiptRecord, _ device: DeviceRecord, team: String, keyID: [UInt8]) throws {
        let token: String
        do {
            token = try providerToken(team: team).token(at: clock.now())
        } catch {
            log("receipts: team \(team): cannot sign a provider token: \(String(describing: error))")
            return try handleDeferred(keyID: keyID, why: "no usable DeviceCheck key for team \(team)")
        }
        while case let wait = pacer.wait(at: Int64(monotonicNanoseconds())), wait > 0 {
            usleep(UInt32(min(wait / 1000, 1_000_000)))
        }
        pacer.started(at: Int64(monotonicNanoseconds()))
        let url = AppleEndpoint.url(base: baseURL, environment: device.environment)
        let body = Array(Base64.encode(record.receipt).utf8)
        let answer = transport.post(url: url, headers: [("Authorization", authorizationPrefix + token)], body: body,
                                    timeoutSeconds: timeoutSeconds)
        attempts += 1
        let now = clock.now()
        var outcome = RedemptionOutcome.classify(status: answer.status, body: answer.body, error: answer.error)
        var fresh: (receipt: AppAttestReceipt, raw: [UInt8])?
        if outcome.kind == .redeemed {
            do {
                fresh = try verifyAnswer(answer.body, record: record, device: device, at: now)
            } catch {
                outcome = RedemptionOutcome(kind: .unexpected, status: 200,
                                            text: "200 but not a valid receipt: \(String(describing: error))")
            }
        }
        ServiceMetrics.receiptRedemption(status: outcome.metricLabel)
        if outcome.kind == .throttled {
            let pause = max(answer.retryAfter ?? 0, schedule.backoff(failures: 1, jitter: 0))
            pausedUntil = now + pause
            log("receipts: Apple answered 429: no request for \(pause) s")
        }
        try recordAttempt(outcome, fresh: fresh, retryAfter: answer.retryAfter, keyID: keyID, sent: record.receipt,
                   team: team, at: now)
        if fresh != nil { redeemed += 1 }
        log("receipts: \(Hex.encode(keyID.prefix(8))) team \(team): \(outcome.text)")
    }

    private func handleDeferred(keyID: [UInt8], why: String) throws {
        deferred += 1
        let now = clock.now()
        try store.write { txn in
            guard var record = try txn.receiptRecord(keyID: keyID) else { return }
            let previous = record.nextRedeemAt
            record.nextRedeemAt = schedule.deferred(at: now, expiresAt: record.expiresAt)
            record.lastOutcome = Self.putOff + why
            try txn.put(record, keyID: keyID, previousDue: previous)
        }
    }

    /// Apple's 200 body: the new receipt in base64, verified like any receipt (the device's
    /// anchor: Apple's root or a test receipt root), about this device's key and App ID, and
    /// created at most five minutes ago.
    func verifyAnswer(_ body: [UInt8], record: ReceiptRecord, device: DeviceRecord,
                      at now: Timestamp) throws -> (receipt: AppAttestReceipt, raw: [UInt8]) {
        let text = String(decoding: body, as: UTF8.self).filter { !$0.isWhitespace }
        guard let raw = Base64.decode(text), !raw.isEmpty else { throw AttestError(.base64Invalid, "not base64") }
        let receipt = try verifiers.verify(raw, anchor: device.anchor, at: now)
        try receipt.check(appID: device.appID, publicKey: device.publicKey[...], at: now, maxAge: 300)
        guard receipt.kind == .receipt, receipt.riskMetric != nil else {
            throw AttestError(.receiptMalformed, "Apple's answer is not a RECEIPT with a risk metric")
        }
        return (receipt, raw)
    }

    /// `AppleRiskMetric.record` with `ctx` (its webhook outbox and configuration).
    public static func recorder(_ ctx: ServiceContext) -> Redeemed {
        { receipt, raw, keyID, at, next, txn in
            try AppleRiskMetric.record(receipt, raw: raw, keyID: keyID, at: at, next: next, in: txn, context: ctx)
        }
    }

    func providerToken(team: String) throws -> ProviderToken {
        guard let key = try keys(team) else { throw AttestError(.keyInvalid, "no key") }
        if let cached = tokens[team], cached.keyID == key.keyID,
           cached.subjectPublicKeyInfo == key.key.subjectPublicKeyInfo { return cached }
        let token = try ProviderToken(key: key)
        tokens[team] = token
        return token
    }
}
