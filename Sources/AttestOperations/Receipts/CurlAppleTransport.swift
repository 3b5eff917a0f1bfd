import HTTPClient

/// `AppleTransport` over libcurl (`HTTPClient`), trusting `receipts.appleCAFile` when set (a
/// test stand-in's CA) or the system's CAs. HTTPS only (no other libcurl protocol, no proxy
/// from the environment: the provider token goes nowhere else), an answer read up to
/// `bodyCap`. The request's headers (the provider token) are never logged; a failure's
/// message names the URL only.
public final class CurlAppleTransport: AppleTransport {
    public let caFile: String?
    private var clients = [Int: HTTPClient]()

    public init(caFile: String) { self.caFile = caFile.isEmpty ? nil : caFile }

    /// The largest answer kept (a receipt is about 4 KiB in base64 text).
    static let bodyCap = 64 * 1024

    public func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AppleAnswer {
        let client = clients[timeoutSeconds] ?? HTTPClient(timeoutMilliseconds: timeoutSeconds * 1000, caFile: caFile,
                                                           httpsOnlyBodyCap: Self.bodyCap)
        clients[timeoutSeconds] = client
        do {
            let response = try client.send("POST", url, headers: headers, body: body)
            let retryAfter = response.header("retry-after").flatMap { Int64($0) }.map { min(max($0, 0), 86_400) }
            return AppleAnswer(status: response.status, body: response.body, retryAfter: retryAfter)
        } catch {
            return AppleAnswer(status: 0, body: [], error: String(describing: error))
        }
    }
}
