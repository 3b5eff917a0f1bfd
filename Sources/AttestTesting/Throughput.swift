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

    /// Runs `body` in batches for about `seconds` of CPU time (at least one batch); returns
    /// (operations, seconds).
    public static func run(seconds: Double, batch: Int = 4, _ body: () -> Void) -> (operations: Int, seconds: Double) {
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

    /// The rates of `a` and `b`, each given about `seconds` in total, alternating in slices of
    /// about `slice` seconds, and the median over the slices of the ratio rate(a) / rate(b)
    /// measured side by side: a burst of machine noise then spoils one pair, not the answer.
    public static func compare(seconds: Double, slice: Double = 0.05, _ a: () -> Void, _ b: () -> Void)
        -> (a: Double, b: Double, ratio: Double) {
        let rounds = max(5, Int((seconds / slice).rounded()))
        var totals = (aOps: 0, aTime: 0.0, bOps: 0, bTime: 0.0)
        var ratios = [Double]()
        for _ in 0..<rounds {
            let ra = run(seconds: seconds / Double(rounds), a), rb = run(seconds: seconds / Double(rounds), b)
            totals.aOps += ra.operations; totals.aTime += ra.seconds
            totals.bOps += rb.operations; totals.bTime += rb.seconds
            ratios.append((Double(ra.operations) / ra.seconds) / (Double(rb.operations) / rb.seconds))
        }
        ratios.sort()
        let median = ratios.count % 2 == 1
            ? ratios[ratios.count / 2] : (ratios[ratios.count / 2 - 1] + ratios[ratios.count / 2]) / 2
        return (Double(totals.aOps) / totals.aTime, Double(totals.bOps) / totals.bTime, median)
    }
}
