@testable import AttestStatus
import Testing

/// Quantiles from cumulative buckets, as Prometheus's `histogram_quantile` computes them.
@Suite struct HistogramQuantileTests {
    @Test func interpolatesInsideTheBucketTheRankFallsIn() throws {
        // 400 observations: 392 at most 0.5 s, 8 in (0.5, 1]. The 99th percentile's rank is 396,
        // the 4th of the 8: halfway through the bucket.
        let q = try #require(HistogramQuantile(0.99, buckets: [(0.25, 392), (0.5, 392), (1, 400), (.infinity, 400)]))
        #expect(abs(q.value - 0.75) < 1e-12 && !q.isLowerBound)
    }

    @Test func theFirstBucketStartsAtZero() throws {
        let q = try #require(HistogramQuantile(0.5, buckets: [(0.001, 100), (0.0025, 100), (.infinity, 100)]))
        #expect(abs(q.value - 0.0005) < 1e-15)
    }

    @Test func aRankInTheInfBucketIsTheLargestFiniteBoundAsALowerBound() throws {
        let q = try #require(HistogramQuantile(0.99, buckets: [(1, 50), (2.5, 90), (.infinity, 100)]))
        #expect(q == HistogramQuantile(value: 2.5, isLowerBound: true))
    }

    @Test func bucketsMayComeInAnyOrder() throws {
        let q = HistogramQuantile(0.99, buckets: [(.infinity, 400), (1, 400), (0.5, 392), (0.25, 392)])
        #expect(q.map { abs($0.value - 0.75) < 1e-12 } == true)
    }

    @Test func aCountBelowTheOneBeforeItIsRaisedToIt() throws {
        // Summed deltas while one endpoint's counters reset can fall with a rising bound.
        let q = try #require(HistogramQuantile(0.5, buckets: [(0.1, 10), (0.2, 4), (.infinity, 10)]))
        #expect(abs(q.value - 0.05) < 1e-15, "the (0.1, 0.2] bucket counts 0, so the median stays in the first")
    }

    @Test func noQuantileWithoutObservationsOrInfBucketOrForABadQ() {
        #expect(HistogramQuantile(0.99, buckets: [(0.1, 0), (.infinity, 0)]) == nil)
        #expect(HistogramQuantile(0.99, buckets: [(0.1, 3), (1, 5)]) == nil)
        #expect(HistogramQuantile(0.99, buckets: [(.infinity, 5)]) == nil)
        #expect(HistogramQuantile(0.99, buckets: []) == nil)
        #expect(HistogramQuantile(1.5, buckets: [(0.1, 3), (.infinity, 5)]) == nil)
        #expect(HistogramQuantile(.nan, buckets: [(0.1, 3), (.infinity, 5)]) == nil)
    }
}
