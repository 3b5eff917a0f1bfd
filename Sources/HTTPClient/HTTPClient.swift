import CCurl

/// A small blocking HTTP client over libcurl, for the CLIs (attest-device, attestctl) and the
/// webhook sender. One instance keeps one curl handle (and its connection) alive.
public final class HTTPClient {
    public struct Response: Sendable {
        public let status: Int
        /// Header names lower-cased, in arrival order.
        public let headers: [(name: String, value: String)]
        public let body: [UInt8]

        public func header(_ name: String) -> String? {
            let lower = name.lowercased()
            return headers.first { $0.name == lower }?.value
        }

        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    private let handle: UnsafeMutableRawPointer
    public let timeoutMilliseconds: Int
    /// For https: the CA certificates (PEM) the server's certificate must chain to, instead of
    /// the system's (a test CA's server certificate).
    public let caFile: String?
    /// For https: false accepts any certificate and name. Only for a loopback probe that proves
    /// who answers otherwise (attestctl serve's readiness check: the start id).
    public let verifiesPeer: Bool

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// When set: only https (no other libcurl protocol, no redirect to one), no proxy from the
    /// environment, and at most this many bytes of a body read (a longer answer is a failure).
    /// For a process that sends a secret to a configured URL (attest-receipts' provider token).
    public let httpsOnlyBodyCap: Int?

    public init(timeoutMilliseconds: Int = 10_000, caFile: String? = nil, verifiesPeer: Bool = true,
                httpsOnlyBodyCap: Int? = nil) {
        _ = Self.globalInit
        guard let h = curl_easy_init() else { fatalError("curl_easy_init failed") }
        handle = h
        self.timeoutMilliseconds = timeoutMilliseconds
        self.caFile = caFile
        self.verifiesPeer = verifiesPeer
        self.httpsOnlyBodyCap = httpsOnlyBodyCap
    }

    deinit { curl_easy_cleanup(handle) }

    /// Sends one request and returns the response; throws on transport failures only (any
    /// HTTP status is a response).
    public func send(_ method: String, _ url: String, headers: [(String, String)] = [],
                     body: [UInt8]? = nil) throws -> Response {
        final class Collected {
            var body: [UInt8] = []
            var headers: [(name: String, value: String)] = []
            var cap = Int.max
        }
        let collected = Collected()
        collected.cap = httpsOnlyBodyCap ?? .max
        curl_easy_reset(handle)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }
        _ = attest_curl_setopt_string(handle, CURLOPT_URL, url)
        _ = attest_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
        _ = attest_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMilliseconds)
        _ = attest_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = attest_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, list)
        if let caFile { _ = attest_curl_setopt_string(handle, CURLOPT_CAINFO, caFile) }
        if httpsOnlyBodyCap != nil {
            _ = attest_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "https")
            _ = attest_curl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "https")
            _ = attest_curl_setopt_string(handle, CURLOPT_NOPROXY, "*")
        }
        if !verifiesPeer {
            _ = attest_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0)
            _ = attest_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0)
        }
        let payload = body ?? []
        if body != nil || method == "POST" || method == "PUT" || method == "PATCH" {
            _ = attest_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, payload.count)
            _ = attest_curl_setopt_long(handle, CURLOPT_POST, 1)
        }
        let context = Unmanaged.passUnretained(collected).toOpaque()
        _ = attest_curl_setopt_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            let c = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
            let n = size * count
            guard c.body.count + n <= c.cap else { return 0 }  // past the cap: curl reports a write error
            if let data { c.body += UnsafeRawBufferPointer(start: data, count: n) }
            return n
        }
        _ = attest_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = attest_curl_setopt_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            let c = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
            let n = size * count
            guard let data else { return n }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
            if line.hasPrefix("HTTP/") { c.headers.removeAll() }
            if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = String(line[line.index(after: colon)...]).trimmedHeaderValue
                c.headers.append((name, value))
            }
            return n
        }
        _ = attest_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        let code: CURLcode = payload.withUnsafeBytes { raw in
            if body != nil || method == "POST" {
                _ = attest_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS,
                                               UnsafeMutableRawPointer(mutating: raw.baseAddress
                                                                           ?? UnsafeRawPointer(bitPattern: 1)!))
            }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            throw Failure(message: "\(method) \(url): \(String(cString: curl_easy_strerror(code)))")
        }
        var status = 0
        _ = attest_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return Response(status: status, headers: collected.headers, body: collected.body)
    }
}

extension String {
    var trimmedHeaderValue: String {
        // "\r\n" is one Character (a grapheme cluster): compared with "\r" or "\n" alone it
        // matches neither, and every value kept its line end.
        String(drop { $0 == " " || $0 == "\t" }.reversed()
            .drop { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }.reversed())
    }
}
