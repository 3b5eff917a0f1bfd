internal import CFastCGI

/// libfcgi's per-request state for one worker, at a stable heap address (libfcgi keeps
/// pointers into it between calls).
///
/// One worker serves one connection at a time: `accept()` takes nginx's next queued connection
/// and reads its `FCGI_BEGIN_REQUEST` and `FCGI_PARAMS` records; `params()` and `readBody`
/// read the request; `write` and `finish()` send `FCGI_STDOUT` and `FCGI_END_REQUEST` and
/// close the connection (nginx does not keep FastCGI connections: no `fastcgi_keep_conn`).
final class FCGXConnection {
    private let request: UnsafeMutablePointer<FCGX_Request>

    /// Prepares a request on `listenFD`. `FCGI_FAIL_ACCEPT_ON_INTR` makes `accept()` return
    /// instead of retrying if a signal ever interrupts it.
    init(listenFD: Int32) {
        request = .allocate(capacity: 1)
        FCGX_InitRequest(request, listenFD, FCGI_FAIL_ACCEPT_ON_INTR)
    }

    deinit {
        FCGX_Free(request, 1)
        request.deallocate()
    }

    /// Accepts the next connection and reads its `FCGI_BEGIN_REQUEST` and `FCGI_PARAMS`.
    /// Returns 0, `-EAGAIN` when none is queued (the listening socket is non-blocking), or
    /// another negative value (`-errno` or one of libfcgi's codes) when accepting failed.
    func accept() -> Int32 { FCGX_Accept_r(request) }

    /// Every parameter (`NAME=value`) of the current request.
    func params() -> [String: String] { Self.params(fromEnvironment: request.pointee.envp) }

    /// Parses a NULL-terminated `NAME=value` array (libfcgi's `envp`). The name ends at the
    /// first `=`; entries without one are skipped; invalid UTF-8 is repaired. A name that
    /// repeats (nginx 1.22 passes a header sent twice as two `HTTP_*` params) is combined
    /// into `first, second` as RFC 9110 §5.3 prescribes and nginx 1.23+ does itself: the
    /// responder never silently picks one of two values (nginx logs the first), and a
    /// single-valued header sent twice reads as malformed.
    static func params(fromEnvironment envp: UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> [String: String] {
        var params: [String: String] = [:]
        guard var entry = envp else { return params }
        params.reserveCapacity(32)
        while let cString = entry.pointee {
            let length = strlen(cString)
            cString.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                let bytes = UnsafeBufferPointer(start: start, count: length)
                if let eq = bytes.firstIndex(of: UInt8(ascii: "=")) {
                    let value = String(decoding: bytes[(eq + 1)...], as: UTF8.self)
                    params[String(decoding: bytes[..<eq], as: UTF8.self), default: ""].combine(value)
                }
            }
            entry += 1
        }
        return params
    }

    /// Reads the body from the FastCGI stdin stream as `BodyPlan` decides. A body that is
    /// too large is not read: libfcgi drains unread input when it closes the connection
    /// (shutdown, then read to EOF), so nginx still receives the response.
    func readBody(contentLength: String?, limit: Int) -> (body: [UInt8], tooLarge: Bool) {
        switch BodyPlan(contentLength: contentLength, limit: limit) {
        case .empty: return ([], false)
        case .tooLarge: return ([], true)
        case .exactly(let count): return (read(exactly: count), false)
        case .untilEnd(let limit):
            let body = read(upTo: limit + 1)
            return body.count > limit ? ([], true) : (body, false)
        }
    }

    /// Writes `bytes` to the FastCGI stdout stream; `false` when nginx has gone away.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return true }
            return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                FCGX_PutStr($0, Int32(buffer.count), request.pointee.out) == Int32(buffer.count)
            }
        }
    }

    /// Flushes the response, sends `FCGI_END_REQUEST` and closes the connection.
    func finish() { FCGX_Finish_r(request) }

    /// Reads `count` bytes straight into the body, or fewer if the stream ends first.
    private func read(exactly count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            base.withMemoryRebound(to: CChar.self, capacity: count) { chars in
                while initialized < count {
                    let n = FCGX_GetStr(chars + initialized, Int32(min(count - initialized, 1 << 20)), request.pointee.in)
                    if n <= 0 { break }
                    initialized += Int(n)
                }
            }
        }
    }

    /// Reads until `count` bytes or the end of the stream through a small stack buffer, so
    /// that a request without a body costs no allocation.
    private func read(upTo count: Int) -> [UInt8] {
        var body: [UInt8] = []
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 4096) { chunk in
            guard let base = chunk.baseAddress else { return }
            while body.count < count {
                let n = FCGX_GetStr(base, Int32(min(count - body.count, chunk.count)), request.pointee.in)
                if n <= 0 { break }
                UnsafeRawBufferPointer(start: base, count: Int(n)).withMemoryRebound(to: UInt8.self) {
                    body.append(contentsOf: $0)
                }
            }
        }
        return body
    }
}

extension String {
    /// Appends a repeated field's value, comma-separated (RFC 9110 §5.3).
    fileprivate mutating func combine(_ value: String) {
        self = isEmpty ? value : self + ", " + value
    }
}

