import AttestOperations
import AttestService
import HTTPClient

/// `WebhookTransport` over libcurl (`GuardedPost`), with the SSRF guard on every connection
/// unless private destinations are allowed.
final class CurlTransport: WebhookTransport {
    let client: GuardedPost

    init(allowPrivate: Bool) {
        let check: GuardedPost.AddressCheck = { bytes in
            guard let address = IPAddress(bytes: bytes) else { return "malformed address" }
            guard let why = address.restriction else { return nil }
            return "\(address) is \(why)"
        }
        client = GuardedPost(check: allowPrivate ? nil : check, allowPlainHTTP: allowPrivate, bodyCap: 4096)
    }

    func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AttemptResult {
        let r = client.post(url, headers: headers, body: body, timeoutSeconds: timeoutSeconds)
        return AttemptResult(status: r.status, durationMs: r.milliseconds, excerpt: AttemptResult.excerpt(of: r.body),
                             error: r.error)
    }
}
