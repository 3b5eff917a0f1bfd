#if canImport(Glibc)
import Glibc
#endif

/// Operations per second of CPU time on the calling thread.
///
/// CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time, so a busy machine (another build on
/// the same cores) slows both sides of a comparison alike instead of whichever ran during the
/// noise; `compare` also interleaves the two sides in short rounds for the same reason.
public enum Throughput {
    /// Seconds of CPU time this thread has used.
    public static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Runs `body` in batches for about `seconds` of CPU time; returns (operations, seconds).
    public static func run(seconds: Double, batch: Int = 8, _ body: () -> Void) -> (operations: Int, seconds: Double) {
        let start = threadCPUSeconds()
        var operations = 0
        var elapsed = 0.0
        repeat {
            for _ in 0..<batch { body() }
            operations += batch
            elapsed = threadCPUSeconds() - start
        } while elapsed < seconds
        return (operations, elapsed)
    }

    /// Operations per second of `body` over about `seconds`.
    public static func rate(seconds: Double, _ body: () -> Void) -> Double {
        let r = run(seconds: seconds, body)
        return Double(r.operations) / r.seconds
    }

    /// The rates of `a` and `b`, each given about `seconds` in total, alternating in `rounds`.
    public static func compare(seconds: Double, rounds: Int = 10, _ a: () -> Void, _ b: () -> Void) -> (a: Double, b: Double) {
        var totals = [(0, 0.0), (0, 0.0)]
        let slice = seconds / Double(rounds)
        for _ in 0..<rounds {
            let ra = run(seconds: slice, a), rb = run(seconds: slice, b)
            totals[0].0 += ra.operations; totals[0].1 += ra.seconds
            totals[1].0 += rb.operations; totals[1].1 += rb.seconds
        }
        return (Double(totals[0].0) / totals[0].1, Double(totals[1].0) / totals[1].1)
    }
}
