import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// Where endpoints get the time; injected so tests can move it.
public protocol Clock: Sendable {
    func now() -> Timestamp
}

/// The system's real-time clock.
public struct SystemClock: Clock {
    public init() {}
    public func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(seconds: Int64(ts.tv_sec))
    }
}

/// A clock tests set by hand.
public final class FixedClock: Clock, @unchecked Sendable {
    private var current: Timestamp
    public init(_ time: Timestamp) { current = time }
    public func now() -> Timestamp { current }
    public func advance(_ seconds: Int64) { current = current + seconds }
    public func set(_ time: Timestamp) { current = time }
}
