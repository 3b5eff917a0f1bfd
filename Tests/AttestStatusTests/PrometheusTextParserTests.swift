@testable import AttestStatus
import Testing

/// Prometheus's text format 0.0.4 as `attestctl status` reads it (`PrometheusTextParser`).
@Suite struct PrometheusTextParserTests {
    func parse(_ text: String) throws -> ScrapedMetrics { try ScrapedMetrics(prometheusText: text) }

    /// The code and message of what parsing `text` throws, or nil when it parses.
    func refusal(_ text: String) -> StatusFailure? {
        do { _ = try parse(text); return nil } catch { return error as? StatusFailure }
    }

    @Test func helpTypeAndSamplesMakeFamilies() throws {
        let e = try parse("""
            # HELP attestedge_requests_total Answers by pool, endpoint and status.
            # TYPE attestedge_requests_total counter
            attestedge_requests_total{pool="refresh",endpoint="refresh",status="200"} 1027
            attestedge_requests_total{pool="refresh",endpoint="refresh",status="409"} 3

            # a comment that is neither HELP nor TYPE
            # TYPE attestedge_webhook_backlog gauge
            attestedge_webhook_backlog 4
            """)
        #expect(e.families.map(\.name) == ["attestedge_requests_total", "attestedge_webhook_backlog"])
        let requests = try #require(e.family("attestedge_requests_total"))
        #expect(requests.type == .counter && requests.help == "Answers by pool, endpoint and status.")
        #expect(requests.samples.map(\.value) == [1027, 3])
        #expect(requests.samples[1].labels == ["pool": "refresh", "endpoint": "refresh", "status": "409"])
        #expect(e.family("attestedge_webhook_backlog")?.type == .gauge)
        #expect(e.family("attestedge_webhook_backlog")?.help == nil)
        #expect(e.sample("attestedge_webhook_backlog", [:])?.value == 4)
    }

    @Test func labelValuesResolveTheirEscapes() throws {
        let e = try parse(#"""
            m{org="a \"quoted\" org",path="C:\\dir",text="two\nlines",plain="é ü {},="} 1
            """#)
        let labels = try #require(e.samples("m").first?.labels)
        #expect(labels["org"] == #"a "quoted" org"#)
        #expect(labels["path"] == #"C:\dir"#)
        #expect(labels["text"] == "two\nlines")
        #expect(labels["plain"] == "é ü {},=", "UTF-8, braces, commas and = inside quotes are the value")
    }

    @Test func helpResolvesItsEscapes() throws {
        let e = try parse(#"""
            # HELP m A \\ backslash and a\nnewline.
            m 1
            """#)
        #expect(e.family("m")?.help == "A \\ backslash and a\nnewline.")
    }

    @Test func valuesIncludeNaNAndInfinities() throws {
        let e = try parse("""
            a NaN
            b +Inf
            c -Inf
            d 1.5e-3
            e -0.25
            f 7 1796000000123
            """)
        #expect(e.samples("a").first?.value.isNaN == true)
        #expect(e.samples("b").first?.value == .infinity)
        #expect(e.samples("c").first?.value == -.infinity)
        #expect(e.samples("d").first?.value == 0.0015)
        #expect(e.samples("e").first?.value == -0.25)
        #expect(e.samples("f").first?.value == 7 && e.samples("f").first?.timestamp == 1_796_000_000_123)
        #expect(e.samples("a").first?.timestamp == nil)
    }

    @Test func aHistogramHoldsItsBucketsSumAndCount() throws {
        let e = try parse("""
            # HELP attestedge_request_duration_seconds Request durations.
            # TYPE attestedge_request_duration_seconds histogram
            attestedge_request_duration_seconds_bucket{pool="refresh",endpoint="refresh",le="0.001"} 2
            attestedge_request_duration_seconds_bucket{pool="refresh",endpoint="refresh",le="+Inf"} 5
            attestedge_request_duration_seconds_sum{pool="refresh",endpoint="refresh"} 0.012
            attestedge_request_duration_seconds_count{pool="refresh",endpoint="refresh"} 5
            """)
        #expect(e.families.count == 1)
        let family = try #require(e.family("attestedge_request_duration_seconds"))
        #expect(family.type == .histogram)
        #expect(family.samples.map(\.name) == ["attestedge_request_duration_seconds_bucket",
                                               "attestedge_request_duration_seconds_bucket",
                                               "attestedge_request_duration_seconds_sum",
                                               "attestedge_request_duration_seconds_count"])
        #expect(e.samples("attestedge_request_duration_seconds_bucket").map { $0.labels["le"] } == ["0.001", "+Inf"])
    }

    @Test func aSummaryHoldsItsQuantilesSumAndCount() throws {
        let e = try parse("""
            # TYPE s summary
            s{quantile="0.99"} 0.2
            s_sum 4
            s_count 20
            """)
        #expect(e.families.map(\.name) == ["s"] && e.family("s")?.samples.count == 3)
    }

    @Test func blanksTabsCarriageReturnsAndATrailingCommaAreTaken() throws {
        let e = try parse("  m { a = \"1\" ,\tb=\"2\", }\t 3 \r\n\tn 4\r\n")
        #expect(e.sample("m", ["a": "1", "b": "2"])?.value == 3)
        #expect(e.sample("n", [:])?.value == 4)
    }

    @Test func withoutTypeASampleIsAnUntypedFamilyOfItsOwn() throws {
        let e = try parse("x_bucket{le=\"1\"} 1\nx_count 1")
        #expect(e.families.map(\.name) == ["x_bucket", "x_count"])
        #expect(e.families.allSatisfy { $0.type == .untyped })
    }

    @Test func anEmptyTextHasNoFamilies() throws {
        #expect(try parse("").families.isEmpty)
        #expect(try parse("\n\n# just a comment\n").families.isEmpty)
    }

    @Test("malformed lines are refused with their line number", arguments: [
        ("<html><body>502 Bad Gateway</body></html>", 1, "metric name"),
        ("{\"error\":\"not_implemented\"}", 1, "metric name"),
        ("ok 1\n2bad 1", 2, "metric name"),
        ("m", 1, "a blank and a value"),
        ("m{a=\"1\"}", 1, "a blank and a value"),
        ("m one", 1, "is not a value"),
        ("m 1 2 3", 1, "after the value"),
        ("m 1 1.5", 1, "timestamp"),
        ("m{a=1} 1", 1, "quoted"),
        ("m{a=\"1} 1", 1, "no closing quote"),
        ("m{a=\"\\x\"} 1", 1, "may escape only"),
        ("m{a=\"1\" b=\"2\"} 1", 1, ", or }"),
        ("m{a=\"1\",a=\"2\"} 1", 1, "label a twice"),
        ("m{1a=\"1\"} 1", 1, "label name"),
        ("m{a:b=\"1\"} 1", 1, "= expected"),
        ("m 1\nm 2", 2, "a second sample of m{}"),
        ("m{a=\"1\",b=\"2\"} 1\nm{b=\"2\",a=\"1\"} 2", 2, "a second sample"),
        ("# TYPE m counter\n# TYPE m counter", 2, "a second # TYPE"),
        ("# TYPE m blob", 1, "needs one of counter"),
        ("# TYPE m", 1, "needs one of"),
        ("# TYPE", 1, "needs a metric name"),
        ("# HELP m one\n# HELP m two", 2, "a second # HELP"),
        ("# HELP m ends in \\", 1, "lone backslash"),
        ("# HELP m a \\t tab", 1, "may escape only"),
        ("m 1\n# TYPE m gauge", 2, "comes after samples of m"),
        ("h_bucket{le=\"1\"} 1\n# TYPE h histogram", 2, "comes after samples of h_bucket"),
        ("# TYPE h histogram\nh_bucket 1", 2, "numeric le"),
        ("# TYPE h histogram\nh_bucket{le=\"NaN\"} 1", 2, "numeric le"),
        ("# TYPE h histogram\nh_bucket{le=\"fast\"} 1", 2, "numeric le"),
    ])
    func malformed(text: String, line: Int, says: String) throws {
        let failure = try #require(refusal(text), "\(text.debugDescription) parsed")
        #expect(failure.code == .syntax)
        #expect(failure.message.hasPrefix("line \(line): "), "\(failure.message)")
        #expect(failure.message.contains(says), "\(failure.message)")
    }

    @Test func moreLabelsThanTheLimitAreRefused() throws {
        let many = (0...PrometheusTextParser.maximumLabels).map { "l\($0)=\"v\"" }.joined(separator: ",")
        #expect(refusal("m{\(many)} 1")?.message.contains("more than 64 labels") == true)
        let enough = (1...PrometheusTextParser.maximumLabels).map { "l\($0)=\"v\"" }.joined(separator: ",")
        #expect(refusal("m{\(enough)} 1") == nil)
    }
}
