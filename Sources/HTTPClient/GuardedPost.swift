import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// One webhook POST through libcurl with the sender's safety rules: only the allowed schemes,
/// no redirects, no proxy from the environment, a whole-request time limit, at most
/// `bodyCap` bytes of the answer read, and — the SSRF guard — every address curl is about to
/// connect to is shown to `check` first (the address actually connected to, whatever DNS said
/// earlier); a non-nil answer refuses that connection and is reported as the failure.
/// One instance per thread; it keeps one curl handle, so connections are reused.
public final class GuardedPost {
    public struct Result: Sendable {
        /// The HTTP status, 0 when no answer arrived.
        public var status: Int
        public var body: [UInt8]
        /// curl's error, or the guard's refusal; empty on a complete answer.
        public var error: String
        public var milliseconds: Int
    }

    /// Judges an address (4 or 16 bytes): the reason it is refused, or `nil`.
    public typealias AddressCheck = @Sendable ([UInt8]) -> String?

    final class Context {
        let check: AddressCheck?
        let bodyCap: Int
        var body: [UInt8] = []
        var refusal = ""
        init(check: AddressCheck?, bodyCap: Int) { self.check = check; self.bodyCap = bodyCap }
    }

    private let handle: UnsafeMutableRawPointer
    private let allowPlainHTTP: Bool
    private let resolve: [String]
    private let context: Context

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// `check` nil and `allowPlainHTTP` true lift the guard (tests with a local receiver).
    /// `resolve`: curl's `CURLOPT_RESOLVE` entries, `host:port:address[,address…]`, in place of
    /// DNS for those names (tests: a name with several addresses).
    public init(check: AddressCheck?, allowPlainHTTP: Bool, bodyCap: Int = 4096, resolve: [String] = []) {
        _ = Self.globalInit
        guard let h = curl_easy_init() else { fatalError("curl_easy_init failed") }
        handle = h
        self.allowPlainHTTP = allowPlainHTTP
        self.resolve = resolve
        context = Context(check: check, bodyCap: bodyCap)
    }

    deinit { curl_easy_cleanup(handle) }

    public func post(_ url: String, headers: [(String, String)], body: [UInt8], timeoutSeconds: Int) -> Result {
        curl_easy_reset(handle)
        context.body = []
        context.refusal = ""
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }
        let protocols = allowPlainHTTP ? "http,https" : "https"
        _ = attest_curl_setopt_string(handle, CURLOPT_URL, url)
        _ = attest_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, protocols)
        _ = attest_curl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, protocols)
        _ = attest_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = attest_curl_setopt_string(handle, CURLOPT_NOPROXY, "*")
        _ = attest_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutSeconds * 1000)
        _ = attest_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = attest_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, list)
        var resolved: UnsafeMutablePointer<curl_slist>? = nil
        for entry in resolve { resolved = curl_slist_append(resolved, entry) }
        defer { curl_slist_free_all(resolved) }
        if resolved != nil { _ = attest_curl_setopt_pointer(handle, CURLOPT_RESOLVE, resolved) }
        _ = attest_curl_setopt_long(handle, CURLOPT_POST, 1)
        _ = attest_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count)
        let raw = Unmanaged.passUnretained(context).toOpaque()
        _ = attest_curl_setopt_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, raw in
            let c = Unmanaged<Context>.fromOpaque(raw!).takeUnretainedValue()
            let n = size * count
            if let data { c.body += UnsafeRawBufferPointer(start: data, count: min(n, c.bodyCap - c.body.count)) }
            return c.body.count >= c.bodyCap ? 0 : n  // past the cap: stop reading (curl reports a write error)
        }
        _ = attest_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, raw)
        if context.check != nil {
            _ = attest_curl_setopt_opensocket(handle) { raw, _, address in
                let c = Unmanaged<Context>.fromOpaque(raw!).takeUnretainedValue()
                guard let address else { return attest_curl_socket_bad() }
                let a = address.pointee
                // `addr` is declared a 16-byte `struct sockaddr` but holds the whole address
                // (curl's storage is larger): read it in place. A copy (`a.addr`) keeps only 16
                // bytes, and a sockaddr_in6's address ends at byte 24.
                let stored = UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!
                let bytes: [UInt8]
                switch a.family {
                case AF_INET where a.addrlen >= MemoryLayout<sockaddr_in>.size:
                    bytes = withUnsafeBytes(of: stored.loadUnaligned(as: sockaddr_in.self).sin_addr) { Array($0) }
                case AF_INET6 where a.addrlen >= MemoryLayout<sockaddr_in6>.size:
                    bytes = withUnsafeBytes(of: stored.loadUnaligned(as: sockaddr_in6.self).sin6_addr) { Array($0) }
                default:
                    c.refusal = "address family \(a.family) refused"
                    return attest_curl_socket_bad()
                }
                if let reason = c.check?(bytes) {
                    c.refusal = reason
                    return attest_curl_socket_bad()
                }
                return socket(a.family, a.socktype, a.protocol)
            }
            _ = attest_curl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, raw)
        }
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        let code: CURLcode = body.withUnsafeBytes { bytes in
            _ = attest_curl_setopt_pointer(handle, CURLOPT_POSTFIELDS,
                                           UnsafeMutableRawPointer(mutating: bytes.baseAddress
                                                                       ?? UnsafeRawPointer(bitPattern: 1)!))
            return curl_easy_perform(handle)
        }
        clock_gettime(CLOCK_MONOTONIC, &end)
        let ms = (end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1_000_000
        var status = 0
        _ = attest_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var error = ""
        if code == CURLE_WRITE_ERROR && status != 0 {
            error = ""  // the answer was longer than the cap: its status and first bytes are enough
        } else if code != CURLE_OK {
            error = String(cString: curl_easy_strerror(code))
            if code == CURLE_OPERATION_TIMEDOUT { status = 0 }
        }
        // A refused address fails the attempt only when no answer came: curl goes on to the
        // host's next address, and an answer from an address the guard let through stands
        // (a host with a public and a private address is not sent every event again).
        if status == 0 && !context.refusal.isEmpty { error = "destination refused: " + context.refusal }
        return Result(status: status, body: context.body, error: error, milliseconds: ms)
    }
}
