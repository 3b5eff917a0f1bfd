/// A quantile from a histogram's cumulative buckets, as Prometheus's `histogram_quantile`
/// computes it: find the bucket the rank `q × count` falls in and interpolate linearly
/// between its lower and upper bound (the first bucket's lower bound is 0).
///
/// When the rank falls in the `+Inf` bucket the answer is the largest finite bound, and
/// `isLowerBound` says the true value is above it (`> 2.5 s`), which Prometheus leaves unsaid.
public struct HistogramQuantile: Sendable, Equatable {
    public let value: Double
    public let isLowerBound: Bool

    public init(value: Double, isLowerBound: Bool) {
        self.value = value
        self.isLowerBound = isLowerBound
    }

    /// `buckets`: each bucket's upper bound (`le`) and cumulative count, in any order; one of
    /// them must be `+Inf` (its count is the total). Nil when there is no observation, no
    /// `+Inf` bucket or `q` is outside 0...1. Counts that fall with a rising bound (a sum of
    /// deltas taken while a pool restarted) are raised to the count before them, as Prometheus does.
    public init?(_ q: Double, buckets: [(upperBound: Double, count: Double)]) {
        guard (0...1).contains(q) else { return nil }
        var sorted = buckets.filter { !$0.upperBound.isNaN && !$0.count.isNaN }.sorted { $0.upperBound < $1.upperBound }
        guard let last = sorted.last, last.upperBound == .infinity, sorted.count >= 2 else { return nil }
        for i in sorted.indices.dropFirst() where sorted[i].count < sorted[i - 1].count {
            sorted[i].count = sorted[i - 1].count
        }
        let total = sorted[sorted.count - 1].count
        guard total > 0 else { return nil }
        let rank = q * total
        let at = sorted.firstIndex { $0.count >= rank } ?? sorted.count - 1
        if at == sorted.count - 1 {
            self.init(value: sorted[sorted.count - 2].upperBound, isLowerBound: true)
            return
        }
        let upper = sorted[at].upperBound
        let lower = at == 0 ? min(0, upper) : sorted[at - 1].upperBound
        let below = at == 0 ? 0 : sorted[at - 1].count
        let inBucket = sorted[at].count - below
        let fraction = inBucket > 0 ? (rank - below) / inBucket : 1
        self.init(value: lower + (upper - lower) * fraction, isLowerBound: false)
    }
}
