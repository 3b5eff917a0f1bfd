import AttestCore

/// One request to Apple's App Attest data endpoint; attest-receipts' is libcurl
/// (`GuardedPost`), tests pass a scripted one.
public protocol AppleTransport: AnyObject {
    func post(url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> AppleAnswer
}

/// Apple's answer to one redemption, or why there was none.
public struct AppleAnswer: Sendable {
    public let status: Int
    public let body: [UInt8]
    /// The Retry-After header in seconds, when it was a number.
    public let retryAfter: Int64?
    /// Set when no HTTP answer arrived (timeout, refused, TLS); then `status` is 0.
    public let error: String?

    public init(status: Int, body: [UInt8], retryAfter: Int64? = nil, error: String? = nil) {
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
        self.error = error
    }
}

/// Where a receipt is redeemed: Apple's host for the receipt's environment, or
/// `receipts.appleURL` (tests), with `/v1/attestationData`.
public enum AppleEndpoint {
    public static let production = "https://data.appattest.apple.com"
    public static let development = "https://data-development.appattest.apple.com"
    public static let path = "/v1/attestationData"

    public static func url(base: String, environment: AppAttestEnvironment) -> String {
        let host = !base.isEmpty ? base : environment == .development ? development : production
        return (host.hasSuffix("/") ? String(host.dropLast()) : host) + path
    }
}
