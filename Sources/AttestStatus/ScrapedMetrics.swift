/// One answer of a Prometheus endpoint in the text format 0.0.4, parsed
/// (`init(prometheusText:)`, `PrometheusTextParser`): its families in the order they came,
/// each with its type, help and samples.
///
/// A histogram family `x` holds the samples `x_bucket{…,le="…"}`, `x_sum` and `x_count`; a
/// summary `x` holds `x{…,quantile="…"}`, `x_sum` and `x_count`. A sample with no `# TYPE`
/// line before it is a family of its own, `untyped`.
public struct ScrapedMetrics: Sendable {
    public enum MetricType: String, Sendable, CaseIterable {
        case counter, gauge, histogram, summary, untyped
    }

    /// One line `name{labels} value [timestamp]`.
    public struct Sample: Sendable, Equatable {
        /// The name as written (`x_bucket` for a bucket of the histogram `x`).
        public let name: String
        public let labels: [String: String]
        /// May be NaN or ±infinity (`NaN`, `+Inf`, `-Inf`).
        public let value: Double
        /// Milliseconds since the epoch, when the line gives one.
        public let timestamp: Int64?

        public init(name: String, labels: [String: String], value: Double, timestamp: Int64? = nil) {
            self.name = name
            self.labels = labels
            self.value = value
            self.timestamp = timestamp
        }

        /// The series (name and labels, sorted) as one string: `x{a="1",b="2"}`. Two samples
        /// with the same key are the same series (in one scrape: a repeat; in two: its values).
        public var seriesKey: String {
            name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.debugDescription)" }
                .joined(separator: ",") + "}"
        }
    }

    public struct Family: Sendable {
        public let name: String
        public internal(set) var type: MetricType
        /// The `# HELP` text, its escapes (`\\`, `\n`) resolved.
        public internal(set) var help: String?
        public internal(set) var samples: [Sample]
    }

    public internal(set) var families: [Family] = []
    var index: [String: Int] = [:]

    init() {}

    /// Parses `text`; throws `StatusFailure.Code.syntax` naming the first bad line.
    public init(prometheusText text: String) throws(StatusFailure) {
        var parser = PrometheusTextParser(text)
        self = try parser.parse()
    }

    /// The family named `name` (a histogram by its base name, not `_bucket`).
    public func family(_ name: String) -> Family? { index[name].map { families[$0] } }

    /// The samples written with exactly this name, whatever family holds them.
    public func samples(_ name: String) -> [Sample] {
        families.flatMap { $0.samples.filter { $0.name == name } }
    }

    /// The sample of `name` with exactly these labels, if the answer has it.
    public func sample(_ name: String, _ labels: [String: String]) -> Sample? {
        samples(name).first { $0.labels == labels }
    }
}
