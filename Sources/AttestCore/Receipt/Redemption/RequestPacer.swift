/// The global request cap (`receipts.requestsPerSecond`): requests spaced at least 1/rate
/// apart, with no burst, on a monotonic clock in nanoseconds that the caller passes in.
public struct RequestPacer: Sendable {
    public let spacingNanoseconds: Int64
    private var lastStart: Int64?

    public init(requestsPerSecond: Int) {
        spacingNanoseconds = 1_000_000_000 / Int64(max(requestsPerSecond, 1))
    }

    /// Nanoseconds to wait at `now` before the next request may start (0: go).
    public func wait(at now: Int64) -> Int64 {
        guard let lastStart else { return 0 }
        return max(0, lastStart + spacingNanoseconds - now)
    }

    /// Records a request starting at `now` (after `wait(at:)` said 0).
    public mutating func started(at now: Int64) { lastStart = now }
}
