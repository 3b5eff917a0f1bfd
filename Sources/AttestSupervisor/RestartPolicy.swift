/// When `attestctl serve` restarts a pool master that died after the pool had come up.
///
/// A pool that cannot start at all stops `serve` at start (its socket never comes up: a
/// configuration or build problem worth stopping for). Once a pool has served, a death is
/// a crash at run time: the pool is restarted, never given up on, while nginx and the other
/// pools keep serving (its location answers 502 JSON meanwhile). The delay is 0 when it had
/// been up for `stableSeconds`; otherwise it doubles from `firstDelay` up to `maxDelay`, so a
/// crash loop costs a fork every 30 s at worst.
struct RestartPolicy: Equatable {
    static let stableSeconds = 10.0
    static let firstDelay = 0.5
    static let maxDelay = 30.0

    /// The delay chosen at the last death (0 after a stable run).
    private(set) var delay = 0.0
    /// Deaths in a row that came before `stableSeconds` of uptime.
    private(set) var quickDeaths = 0

    /// Records a death after `uptime` seconds; returns how long to wait before restarting.
    mutating func delayAfterDeath(uptime: Double) -> Double {
        if uptime >= Self.stableSeconds {
            quickDeaths = 0
            delay = 0
        } else {
            quickDeaths += 1
            delay = min(max(delay * 2, Self.firstDelay), Self.maxDelay)
        }
        return delay
    }
}
