import CLISupport

/// Judges what the metrics URL answered, so a wrong URL, a stack without metrics or another
/// server says so instead of showing a status of zeros.
public enum MetricsAnswer {
    /// The exposition in a `GET /metrics` answer. Throws `answer` for a status other than 200
    /// or a `Content-Type` other than `text/plain` (what Prometheus's text format 0.0.4 is
    /// served as), `syntax` for a body that is not that format.
    public static func exposition(url: String, status: Int, contentType: String?, body: [UInt8])
        throws(StatusFailure) -> ScrapedMetrics {
        guard status == 200 else {
            throw StatusFailure(.answer, "GET \(url) answered HTTP \(status), not 200 with Prometheus metrics"
                                    + (body.isEmpty ? "" : ": \(excerpt(body))"))
        }
        // Trimmed here: HTTPClient leaves a header line's CRLF on its value.
        if let contentType = contentType?.trimmingWhitespace, !contentType.lowercased().hasPrefix("text/plain") {
            throw StatusFailure(.answer, "GET \(url) answered Content-Type \(excerpt(Array(contentType.utf8))), "
                                    + "not Prometheus's text format (text/plain; version=0.0.4)")
        }
        do {
            return try ScrapedMetrics(prometheusText: String(decoding: body, as: UTF8.self))
        } catch {
            throw StatusFailure(.syntax, "GET \(url) did not answer Prometheus's text format: \(error.message)")
        }
    }

    /// Nothing answered at `url`: which URL, curl's `reason`, and what must run there.
    public static func unreachable(url: String, reason: String) -> StatusFailure {
        StatusFailure(.unreachable, "nothing answers at \(url) (\(reason)). The metrics are served by nginx and "
                          + "the monitor pool: run 'attestctl serve', or on a host 'systemctl start attestedge.target' "
                          + "(attest-monitor included); --url names another address")
    }

    /// At most 120 characters of an answer, printable ASCII only, for an error message.
    static func excerpt(_ bytes: [UInt8]) -> String {
        let shown = bytes.prefix(120).map { (0x20...0x7E).contains($0) ? Character(UnicodeScalar($0)) : "?" }
        return String(shown) + (bytes.count > 120 ? "…" : "")
    }
}
