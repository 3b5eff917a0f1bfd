import AttestStatus
import HTTPClient
#if canImport(Glibc)
import Glibc
#endif

/// Scrapes one metrics URL with libcurl (`attestctl status`) and keeps the last scrape, with
/// when it was taken.
final class MetricsScraper {
    struct Scrape {
        let exposition: ScrapedMetrics
        /// CLOCK_MONOTONIC seconds, halfway through the request.
        let at: Double
    }

    let url: String
    private let client = HTTPClient(timeoutMilliseconds: 5_000)
    private(set) var last: Scrape?

    init(url: String) { self.url = url }

    func scrape() throws -> Scrape {
        let start = Self.monotonicSeconds()
        let response: HTTPClient.Response
        do {
            response = try client.send("GET", url, headers: [("Accept", "text/plain; version=0.0.4")])
        } catch {
            let message = "\(error)", prefix = "GET \(url): "  // HTTPClient's form: "GET URL: curl's error"
            throw MetricsAnswer.unreachable(url: url, reason: message.hasPrefix(prefix)
                                                ? String(message.dropFirst(prefix.count)) : message)
        }
        let exposition = try MetricsAnswer.exposition(url: url, status: response.status,
                                                      contentType: response.header("content-type"), body: response.body)
        let scrape = Scrape(exposition: exposition, at: (start + Self.monotonicSeconds()) / 2)
        last = scrape
        return scrape
    }

    /// Scrapes again and computes the status since `earlier`.
    func status(since earlier: Scrape) throws -> ServiceStatus {
        let later = try scrape()
        return try ServiceStatus(earlier: earlier.exposition, later: later.exposition, seconds: later.at - earlier.at)
    }

    private static func monotonicSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
