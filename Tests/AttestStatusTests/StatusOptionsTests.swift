@testable import AttestStatus
import AttestConfig
import CLISupport
import Testing

/// `attestctl status`'s options, the URL it scrapes and how it judges the answer.
@Suite struct StatusOptionsTests {
    @Test("--watch takes an optional interval", arguments: [
        ([], nil, false),
        (["--watch"], 2, false),
        (["--watch", "5"], 5, false),
        (["--watch=7"], 7, false),
        (["--watch", "--json"], 2, true),
        (["--json", "--watch", "3600"], 3600, true),
        (["--data", "/srv/ae", "--watch"], 2, false),
    ] as [([String], Int?, Bool)])
    func watch(argv: [String], seconds: Int?, json: Bool) throws {
        let options = try StatusOptions(argv)
        #expect(options.watchSeconds == seconds && options.json == json)
    }

    @Test func dataAndURL() throws {
        let options = try StatusOptions(["--data", "/srv/ae", "--url", "http://10.0.0.5:9469/metrics"])
        #expect(options == StatusOptions(data: "/srv/ae", url: "http://10.0.0.5:9469/metrics"))
    }

    @Test("bad options are usage errors", arguments: [
        ["--watch", "0"], ["--watch=0"], ["--watch", "3601"], ["--watch=soon"], ["--watch", "-1"], ["extra"],
        ["--url", "127.0.0.1:9469/metrics"], ["--url", "ftp://host/metrics"], ["--url", "http://a b/metrics"],
        ["--url", "http://host/metrics\n"], ["--url"], ["--verbose"], ["--json=yes"],
    ])
    func refused(argv: [String]) {
        #expect(throws: UsageError.self) { try StatusOptions(argv) }
    }

    @Test("the default URL is server.metricsListen's, wildcards reached on loopback", arguments: [
        ("127.0.0.1:9469", "http://127.0.0.1:9469/metrics"),
        ("10.0.0.5:9100 reuseport", "http://10.0.0.5:9100/metrics"),
        ("[::1]:9469", "http://[::1]:9469/metrics"),
        ("[2001:db8::5]:9469", "http://[2001:db8::5]:9469/metrics"),
        ("*:9469", "http://127.0.0.1:9469/metrics"),
        ("0.0.0.0:9469", "http://127.0.0.1:9469/metrics"),
        ("[::]:9469", "http://[::1]:9469/metrics"),
        ("metrics.internal:9469", "http://metrics.internal:9469/metrics"),
    ])
    func defaultURL(listen: String, url: String) throws {
        #expect(MetricsURL.of(try ListenAddress(parsing: listen, key: "server.metricsListen")) == url)
    }

    static let url = "http://127.0.0.1:9469/metrics"

    @Test func aPrometheusAnswerIsParsed() throws {
        let e = try MetricsAnswer.exposition(url: Self.url, status: 200,
                                             contentType: "text/plain; version=0.0.4; charset=utf-8",
                                             body: Array(Scrapes.later.utf8))
        #expect(e.family("attestedge_pool_workers")?.samples.count == 5)
        #expect(try MetricsAnswer.exposition(url: Self.url, status: 200, contentType: nil, body: Array("m 1".utf8))
                    .families.count == 1)
    }

    @Test func aStatusOtherThan200SaysWhatCame() {
        do {
            _ = try MetricsAnswer.exposition(url: Self.url, status: 501, contentType: "application/json",
                                             body: Array((#"{"error":"not_implemented","message":"#
                                                              + #""Metrics are not built yet."}"#).utf8))
            Issue.record("a 501 was taken")
        } catch {
            #expect(error.code == .answer)
            #expect(error.message.hasPrefix("GET \(Self.url) answered HTTP 501, not 200 with Prometheus metrics: "))
            #expect(error.message.contains("Metrics are not built yet."))
        }
    }

    @Test func anHTMLPageIsNotMetrics() {
        let page = Array("<html>\n<body>\u{7}welcome</body></html>".utf8)
        #expect(throws: StatusFailure(.answer, "")) {
            try MetricsAnswer.exposition(url: Self.url, status: 200, contentType: "text/html", body: page)
        }
        do {
            _ = try MetricsAnswer.exposition(url: Self.url, status: 200, contentType: "text/html\r\n", body: page)
            Issue.record("HTML was taken for metrics")
        } catch {
            #expect(error.message == "GET \(Self.url) answered Content-Type text/html, "
                        + "not Prometheus's text format (text/plain; version=0.0.4)", "a header line's CRLF is trimmed")
        }
        do {
            _ = try MetricsAnswer.exposition(url: Self.url, status: 200, contentType: "text/plain", body: page)
            Issue.record("HTML was taken for metrics")
        } catch {
            #expect(error.code == .syntax)
            #expect(error.message == "GET \(Self.url) did not answer Prometheus's text format: line 1: "
                        + "a sample must start with a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        }
    }

    @Test func anExcerptShowsOnlyPrintableASCIIAndIsCut() {
        #expect(MetricsAnswer.excerpt(Array("a\u{1B}[31mb\né".utf8)) == "a?[31mb???")
        #expect(MetricsAnswer.excerpt(Array(repeating: UInt8(ascii: "x"), count: 121))
                    == String(repeating: "x", count: 120) + "…")
    }

    @Test func unreachableNamesTheURLAndWhatMustRun() {
        let failure = MetricsAnswer.unreachable(url: Self.url, reason: "Couldn't connect to server")
        #expect(failure.code == .unreachable)
        #expect(failure.message.contains("nothing answers at \(Self.url) (Couldn't connect to server)"))
        #expect(failure.message.contains("attestctl serve") && failure.message.contains("monitor"))
    }
}
