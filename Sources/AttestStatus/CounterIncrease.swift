/// How much each counter series of a later scrape grew since an earlier one: `later − earlier`,
/// or `later` alone when the series is new or went down (its process started over and counts
/// from 0 again, as Prometheus's `increase` reads a reset). NaN samples count as no increase.
struct CounterIncrease {
    private let earlier: [String: Double]
    private let later: ScrapedMetrics

    init(earlier: ScrapedMetrics, later: ScrapedMetrics) {
        var values = [String: Double]()
        for family in earlier.families {
            for sample in family.samples { values[sample.seriesKey] = sample.value }
        }
        self.earlier = values
        self.later = later
    }

    /// The increase of one series.
    func increase(_ sample: ScrapedMetrics.Sample) -> Double {
        guard !sample.value.isNaN else { return 0 }
        guard let before = earlier[sample.seriesKey], !before.isNaN, sample.value >= before else { return sample.value }
        return sample.value - before
    }

    /// The summed increase of the samples named `name` whose labels `keep` accepts.
    func sum(_ name: String, where keep: ([String: String]) -> Bool) -> Double {
        later.samples(name).filter { keep($0.labels) }.map(increase).reduce(0, +)
    }

    /// The summed increase of the samples named `name` that `keep` accepts, by the value of
    /// their label `label` (a histogram's buckets by `le`, over every other label).
    func byLabel(_ name: String, _ label: String, where keep: ([String: String]) -> Bool) -> [String: Double] {
        var sums = [String: Double]()
        for sample in later.samples(name) where keep(sample.labels) {
            guard let value = sample.labels[label] else { continue }
            sums[value, default: 0] += increase(sample)
        }
        return sums
    }
}
