/// When a receipt is sent to Apple (next): the first time soon after attestation, then at
/// most once per interval, never before the receipt's not-before, never after its expiry,
/// and failures backed off. Times are whole seconds; time and jitter are injected.
///
/// - first: attestation + `firstDelaySeconds` (`receipts.firstDelaySeconds`).
/// - after a 200: max(now + interval, the new receipt's not-before).
/// - 304: the receipt's not-before when it is still ahead, else now + min(interval, 1 h).
/// - 404: now + max(interval, `noDataSeconds`) (Apple keeps 30 days of data; a new
///   attestation on the device may bring some back).
/// - 401, a team without a key or stopped, a device not seen within the window: now + interval.
/// - 429, 5xx, transport errors: now + firstDelay·2^(failures−1), at most the interval, stretched
///   by up to a quarter at random (jitter), and at least a Retry-After the answer gave.
/// - 400 (either kind): nil, never again (a new attestation brings a new receipt).
/// Any time after the receipt's expiry is nil: an expired receipt is not redeemable.
public struct RedemptionSchedule: Sendable, Equatable {
    /// `receipts.intervalHours` in seconds.
    public var intervalSeconds: Int64
    /// `receipts.firstDelaySeconds`.
    public var firstDelaySeconds: Int64
    /// `receipts.seenWithinDays` in seconds.
    public var seenWithinSeconds: Int64

    /// How long after a 404 the receipt is tried again, at least.
    public static let noDataSeconds: Int64 = 7 * 86_400
    /// How long after a 304 whose not-before already passed (clocks disagree), at most.
    public static let tooEarlySeconds: Int64 = 3600

    public init(intervalHours: Int, firstDelaySeconds: Int, seenWithinDays: Int) {
        intervalSeconds = Int64(intervalHours) * 3600
        self.firstDelaySeconds = Int64(firstDelaySeconds)
        seenWithinSeconds = Int64(seenWithinDays) * 86_400
    }

    /// The first attempt for a receipt stored at attestation `attestedAt`.
    public func first(attestedAt: Timestamp, expiresAt: Timestamp?) -> Timestamp? {
        bounded(attestedAt + firstDelaySeconds, notBefore: nil, expiresAt: expiresAt)
    }

    /// Whether a device last seen at `lastSeen` is redeemed at `now` (seen within the window).
    public func isRecent(lastSeen: Timestamp, at now: Timestamp) -> Bool {
        now.seconds - lastSeen.seconds <= seenWithinSeconds
    }

    /// A receipt put off without asking Apple (no key, stopped team, device not seen lately).
    public func deferred(at now: Timestamp, expiresAt: Timestamp?) -> Timestamp? {
        bounded(now + intervalSeconds, notBefore: nil, expiresAt: expiresAt)
    }

    /// The next attempt after `outcome` at `now`. `failures` counts the backed-off attempts in
    /// a row including this one; `notBefore`/`expiresAt` are the receipt kept (after a 200, the
    /// new one's); `retryAfter` is the answer's Retry-After in seconds; `jitter` is in 0..<1.
    public func next(after outcome: RedemptionOutcome, at now: Timestamp, failures: Int, notBefore: Timestamp?,
                     expiresAt: Timestamp?, retryAfter: Int64? = nil, jitter: Double) -> Timestamp? {
        switch outcome.kind {
        case .redeemed:
            return bounded(now + intervalSeconds, notBefore: notBefore, expiresAt: expiresAt)
        case .tooEarly:
            if let notBefore, notBefore > now { return bounded(notBefore, notBefore: nil, expiresAt: expiresAt) }
            return bounded(now + min(intervalSeconds, Self.tooEarlySeconds), notBefore: nil, expiresAt: expiresAt)
        case .wrongEnvironment, .badPayload:
            return nil
        case .unauthorized:
            return deferred(at: now, expiresAt: expiresAt)
        case .noData:
            return bounded(now + max(intervalSeconds, Self.noDataSeconds), notBefore: nil, expiresAt: expiresAt)
        case .throttled, .serverError, .transportError, .unexpected:
            let delay = backoff(failures: failures, jitter: jitter)
            return bounded(now + max(delay, retryAfter ?? 0), notBefore: notBefore, expiresAt: expiresAt)
        }
    }

    /// firstDelay·2^(failures−1) capped at the interval (at least 1 s), plus up to a quarter.
    public func backoff(failures: Int, jitter: Double) -> Int64 {
        let doublings = min(max(failures - 1, 0), 40)
        let base = max(1, min(intervalSeconds, firstDelaySeconds << Int64(doublings)))
        let stretch = Int64(Double(base) * 0.25 * min(max(jitter, 0), 1))
        return base + stretch
    }

    private func bounded(_ time: Timestamp, notBefore: Timestamp?, expiresAt: Timestamp?) -> Timestamp? {
        let at = max(time, notBefore ?? time)
        if let expiresAt, at > expiresAt { return nil }
        return at
    }
}
