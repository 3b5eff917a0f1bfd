internal import CFastCGI
import Glibc

/// A worker's FastCGI connections, one at a time: accepts on the shared listening socket,
/// reads the request through `RequestParser`, writes the answer as records and closes
/// (nginx does not keep FastCGI connections: no `fastcgi_keep_conn`).
///
/// ```
/// accept()    accept4 (non-blocking) → BEGIN_REQUEST, PARAMS          → .request(params)
/// readBody()  STDIN records as `BodyPlan` decides
/// respond()   STDOUT records, empty STDOUT, END_REQUEST
/// finish()    close; first shutdown(SHUT_WR) and read to EOF if input may be left unread
/// ```
/// Every wait for the peer is a `poll` bounded by `Timeouts`, so a stalled or slow peer holds
/// a worker for `Timeouts.requestSeconds` at most while reading, `writeMilliseconds` per wait
/// while writing and `drainSeconds` while draining. Writes use `MSG_NOSIGNAL`: a peer that
/// went away is a failed write, never a SIGPIPE.
final class Connection {
    struct Timeouts: Sendable {
        /// One wait for more of the request, in milliseconds.
        var readMilliseconds: Int32 = 5_000
        /// Reading the whole request (records up to the end of the body), in seconds.
        var requestSeconds = 30.0
        /// One wait for the peer to take more of the response, in milliseconds.
        var writeMilliseconds: Int32 = 5_000
        /// One wait while draining unread input after the response (libfcgi's 2 s).
        var drainMilliseconds: Int32 = 2_000
        /// Draining in all, in seconds; bytes drained are bounded by `maxDrainBytes`.
        var drainSeconds = 5.0
        var maxDrainBytes = 4 << 20
    }

    enum Accepted {
        /// A request's params; read its body, respond, finish.
        case request(Params)
        /// No connection was queued (`EAGAIN`), or accepting was interrupted.
        case nothingQueued
        /// A connection was accepted and closed without a request: the peer closed or
        /// stalled, broke the protocol (`error`), asked for another role or aborted.
        case dropped(FastCGIError?)
        /// `accept4` failed with this `errno`.
        case failed(Int32)
    }

    private let listenFD: Int32
    private let timeouts: Timeouts
    private var parser: RequestParser
    private var fd: Int32 = -1
    private var deadline = 0.0
    /// Nothing more is to be read: the body's end, EOF, an error or a timeout was seen.
    private var inputDone = false
    /// The web server sent `ABORT_REQUEST` while the body was being read: the request is not
    /// answered (`endAborted`), whatever of its body came.
    private(set) var aborted = false
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)

    /// `maxConnections` is what `FCGI_GET_VALUES` reports as `FCGI_MAX_CONNS`.
    init(listenFD: Int32, maxConnections: Int = 1, timeouts: Timeouts = Timeouts()) {
        self.listenFD = listenFD
        self.timeouts = timeouts
        parser = RequestParser(maxConnections: maxConnections)
    }

    deinit {
        if fd >= 0 { close(fd) }
        chunk.deallocate()
    }

    /// Accepts the next queued connection and reads its `FCGI_BEGIN_REQUEST` and `FCGI_PARAMS`,
    /// answering management records on the way.
    func accept() -> Accepted {
        let client = attest_fcgi_accept(listenFD, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        guard client >= 0 else {
            let code = errno
            return code == EAGAIN || code == EWOULDBLOCK || code == EINTR || code == ECONNABORTED
                ? .nothingQueued : .failed(code)
        }
        fd = client
        parser.reset()
        inputDone = false
        aborted = false
        deadline = MonotonicClock.now() + timeouts.requestSeconds
        while true {
            do {
                while let event = try parser.next() {
                    switch event {
                    case .params(let params): return .request(params)
                    case .reply(let bytes):
                        guard send(bytes) else { return drop(nil) }
                    case .refused(let bytes):
                        _ = send(bytes)
                        return drop(nil)
                    case .aborted:
                        _ = send(RecordWriter.endRequest(requestID: parser.requestID, status: .requestComplete))
                        return drop(nil)
                    case .stdin, .stdinEnd:
                        return drop(FastCGIError(.protocolViolation, "body before params"))
                    }
                }
            } catch {
                inputDone = true
                return drop(error)
            }
            if let error = fill() { return drop(error) }
            if inputDone { return drop(nil) }
        }
    }

    /// Reads the body from the `FCGI_STDIN` stream as `BodyPlan` decides. A body that is too
    /// large is not read (`finish` drains it after the answer, so nginx, which may still be
    /// sending it, reads the answer instead of a reset). A body cut short by the peer is
    /// returned as far as it came.
    func readBody(contentLength: String?, limit: Int) -> (body: [UInt8], tooLarge: Bool) {
        switch BodyPlan(contentLength: contentLength, limit: limit) {
        case .empty:
            readStdin(fromSocket: false) { _ in true }
            return ([], false)
        case .tooLarge:
            return ([], true)
        case .exactly(let count):
            var body = [UInt8]()
            body.reserveCapacity(count)
            // Bytes past the declared length are read and dropped, up to `limit` of them.
            var extra = 0
            readStdin(fromSocket: true) { bytes in
                let taken = min(bytes.count, count - body.count)
                body.append(contentsOf: bytes.prefix(taken))
                extra += bytes.count - taken
                return extra <= limit
            }
            return (body, false)
        case .untilEnd(let limit):
            var body = [UInt8]()
            var tooLarge = false
            readStdin(fromSocket: true) { bytes in
                guard bytes.count <= limit - body.count else {
                    tooLarge = true
                    return false
                }
                body.append(contentsOf: bytes)
                return true
            }
            return tooLarge ? ([], true) : (body, false)
        }
    }

    /// Ends a request the web server aborted (`aborted`) with `END_REQUEST` alone, as when
    /// it aborts before the params, and closes the connection.
    func endAborted() {
        _ = send(RecordWriter.endRequest(requestID: parser.requestID, status: .requestComplete))
        finish()
    }

    /// Sends `stdout` (the CGI response) as `FCGI_STDOUT` records and ends the request;
    /// `false` when the peer has gone away or stopped reading.
    @discardableResult
    func respond(_ stdout: [UInt8]) -> Bool {
        send(RecordWriter.response(stdout, requestID: parser.requestID))
    }

    /// Closes the connection. If the peer may still be sending (the body was not read to its
    /// end), the write side is shut down first and input read to EOF, as libfcgi does: a
    /// close with unread input would reset the connection and nginx could lose the answer.
    func finish() {
        guard fd >= 0 else { return }
        if !inputDone, shutdown(fd, Int32(SHUT_WR)) == 0 { drain() }
        close(fd)
        fd = -1
    }

    // MARK: - I/O

    private func drop(_ error: FastCGIError?) -> Accepted {
        finish()
        return .dropped(error)
    }

    /// Takes `STDIN` events, passing body bytes to `take` until it returns `false` or the
    /// body ends; reads more from the socket only when `fromSocket`.
    private func readStdin(fromSocket: Bool, _ take: (ArraySlice<UInt8>) -> Bool) {
        while !inputDone {
            do {
                while let event = try parser.next() {
                    switch event {
                    case .stdin(let bytes):
                        if !take(bytes) { return }
                    case .stdinEnd:
                        inputDone = true
                        return
                    case .aborted:
                        inputDone = true
                        aborted = true
                        return
                    case .reply(let bytes):
                        guard send(bytes) else { inputDone = true; return }
                    case .params, .refused:
                        return  // not produced once the params are in
                    }
                }
            } catch {
                inputDone = true
                return
            }
            guard fromSocket, fill() == nil else { return }
        }
    }

    /// Reads what the peer has sent into the parser, waiting up to the request's deadline.
    /// Returns `nil` after reading bytes, or at EOF or a socket error (a reset: the peer is
    /// gone; then `inputDone`); the timeout error when the peer stalled (also `inputDone`: a
    /// stalled peer is not drained).
    private func fill() -> FastCGIError? {
        while true {
            // Checked on every read, not only before a wait: a peer that keeps the socket
            // readable with records that carry nothing (DATA, another request's) must not
            // hold the worker past the deadline.
            guard MonotonicClock.now() < deadline else {
                inputDone = true
                return FastCGIError(.timeout, "the request took longer than \(timeouts.requestSeconds) s")
            }
            let n = recv(fd, chunk.baseAddress, chunk.count, 0)
            if n > 0 {
                parser.consume(UnsafeRawBufferPointer(rebasing: chunk[..<n]))
                return nil
            }
            if n == 0 {
                inputDone = true
                return nil
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else {
                inputDone = true
                return nil
            }
            let left = deadline - MonotonicClock.now()
            guard left > 0,
                  wait(for: Int16(POLLIN), milliseconds: min(timeouts.readMilliseconds, Int32(left * 1000) + 1)) else {
                inputDone = true
                return FastCGIError(.timeout, "no request bytes for \(timeouts.readMilliseconds) ms "
                                                  + "or past \(timeouts.requestSeconds) s")
            }
        }
    }

    /// Writes all of `bytes`; `false` if the peer is gone or takes none for `writeMilliseconds`.
    private func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n > 0 {
                    offset += n
                    continue
                }
                let code = errno
                if n < 0, code == EINTR { continue }
                guard n < 0, code == EAGAIN || code == EWOULDBLOCK,
                      wait(for: Int16(POLLOUT), milliseconds: timeouts.writeMilliseconds) else { return false }
            }
            return true
        }
    }

    /// Reads and drops input until EOF, a `drainMilliseconds` silence, `drainSeconds` or
    /// `maxDrainBytes`.
    private func drain() {
        let end = MonotonicClock.now() + timeouts.drainSeconds
        var drained = 0
        while drained < timeouts.maxDrainBytes, MonotonicClock.now() < end {
            let n = recv(fd, chunk.baseAddress, chunk.count, 0)
            if n > 0 {
                drained += n
                continue
            }
            if n == 0 { return }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK,
                  wait(for: Int16(POLLIN), milliseconds: timeouts.drainMilliseconds) else { return }
        }
    }

    /// Polls the connection for `events`; `false` on a timeout or an error.
    private func wait(for events: Int16, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }
}
