import FastCGI

/// One request's log line (`server.requestLog`: every failure, or every request with `all`):
/// `<endpoint> requestId=<id> status=<n> code=<code|-> us=<µs in the pool>[ detail="…"]`.
struct RequestLogLine {
    let endpoint: String, requestID: String, status: Int, code: String, detail: String

    /// Built by interpolation, so every value is escaped (`LogMessage`).
    func text(us: Int64) -> LogMessage {
        detail.isEmpty
            ? "\(endpoint) requestId=\(requestID) status=\(status) code=\(code) us=\(us)"
            : "\(endpoint) requestId=\(requestID) status=\(status) code=\(code) us=\(us) detail=\"\(detail)\""
    }
}
