import AttestStore
#if canImport(Glibc)
import Glibc
#endif

/// A client for nginx's nchan publisher location: HTTP/1.1 over a unix stream socket, one
/// request per connection (`Connection: close`), a deadline of `timeoutMilliseconds` for the
/// whole exchange. No libcurl: the pools' units allow only `AF_UNIX`, and this needs no more.
///
/// Wire format (site.conf's publisher server, listening on `RUN/flags-publish.sock`):
/// - `POST /pub/<channel>` with the payload as the body, `Content-Type: application/json` →
///   201 (subscribers waiting) or 202 (stored for later subscribers).
/// - `GET /pub/<channel>` with `Accept: application/json` → 200 `{"messages": n, "requested": …,
///   "subscribers": …, "last_message_id": "<unix seconds>:<n>"}`, or 404 when nchan holds no
///   such channel (after `nginx -s reload` nchan's memory store is empty).
/// - `DELETE /pub/<channel>` → 200 (deleted: every subscriber's stream ends, nchan writes a
///   `:410` comment first), or 404 when no stream holds it.
/// A channel is `TEAMID.bundle/env` or a holder `~lineage/<hex>` (see `FlagChannel`): it goes into the path as is; the
/// publisher location's regex refuses anything else.
public enum NchanPublisher {
    /// Why a request to the publisher failed; `description` is for logs and warnings.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The deadline for one exchange (connect, send, read until nginx closes).
    public static let timeoutMilliseconds: Int32 = 1000
    /// The most of nginx's answer that is read; the channel info and the POST answers are tiny.
    static let maxResponseBytes = 64 * 1024

    /// Stores `body` as `channel`'s one message (the publisher location keeps a buffer of 1),
    /// delivered at once to every subscriber. Throws `Failure` for anything but a 2xx.
    /// Each call is counted in `attestedge_flag_publishes_total` (`ok` or `failed`) where the
    /// process has a metrics segment (the pools; not attestctl).
    public static func publish(socket: String, channel: String, body: [UInt8]) throws(Failure) {
        var ok = false
        defer { ServiceMetrics.flagPublish(ok: ok) }
        let head = "POST /pub/\(channel) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let answer = try exchange(socket: socket, request: Array(head.utf8) + body)
        guard (200..<300).contains(answer.status) else {
            throw Failure("publishing to \(channel) on \(socket): nginx answered \(answer.status)")
        }
        ok = true
    }

    /// Deletes `channel`, ending every stream subscribed to it. A channel nchan does not hold
    /// (404: no stream holds it) counts as done. Throws `Failure` for anything else.
    public static func delete(socket: String, channel: String) throws(Failure) {
        let head = "DELETE /pub/\(channel) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        let answer = try exchange(socket: socket, request: Array(head.utf8))
        guard (200..<300).contains(answer.status) || answer.status == 404 else {
            throw Failure("deleting \(channel) on \(socket): nginx answered \(answer.status)")
        }
    }

    /// What nchan's channel info says about a channel's stored message.
    public struct ChannelInfo: Equatable, Sendable {
        /// Messages stored (0 or 1 here: the publisher location keeps a buffer of 1).
        public let messages: Int
        /// The seconds part of `last_message_id` (nchan's `<unix seconds>:<n>`, the time nginx
        /// stored the message); nil when nchan names no message.
        public let lastMessageSeconds: Int64?

        /// Whether a subscriber would get no message, or one stored in or before `changedAt`'s
        /// second: the channel must be published again. Before: a change whose publish failed.
        /// In the same second: the message may predate the change (this host primed the channel,
        /// then a change on another host, or one whose publish failed, in that second); whole
        /// seconds cannot tell, so it is republished. The cost: the first connect after each
        /// change (and any in the change's second) republishes the same defaults once.
        public func isStale(changedAt: Int64) -> Bool {
            guard messages > 0, let seconds = lastMessageSeconds else { return true }
            return seconds <= changedAt
        }
    }

    /// nchan's info on `channel`: `messages` 0 when it does not exist (404). Throws `Failure`
    /// when the socket cannot be reached or the answer is not channel info.
    public static func channelInfo(socket: String, channel: String) throws(Failure) -> ChannelInfo {
        let answer = try get(socket: socket, target: "/pub/\(channel)", accept: "application/json")
        if answer.status == 404 { return ChannelInfo(messages: 0, lastMessageSeconds: nil) }
        guard answer.status == 200, let count = messagesMember(answer.body) else {
            throw Failure("channel info for \(channel) on \(socket): nginx answered \(answer.status)")
        }
        return ChannelInfo(messages: count, lastMessageSeconds: lastMessageSeconds(answer.body))
    }

    /// The `"messages": n` member of nchan's JSON channel info (nchan writes it as a plain
    /// unsigned integer); `nil` when absent.
    static func messagesMember(_ body: ArraySlice<UInt8>) -> Int? {
        let key = Array("\"messages\"".utf8)
        guard let start = body.firstRange(of: key)?.upperBound else { return nil }
        return digits(body, from: skipSeparator(body, from: start)).map { Int($0) }
    }

    /// The seconds of `"last_message_id": "<seconds>:<n>"` in nchan's channel info; `nil` when
    /// absent or not of that form.
    static func lastMessageSeconds(_ body: ArraySlice<UInt8>) -> Int64? {
        let key = Array("\"last_message_id\"".utf8)
        guard let start = body.firstRange(of: key)?.upperBound else { return nil }
        let quote = skipSeparator(body, from: start)
        guard quote < body.endIndex, body[quote] == UInt8(ascii: "\"") else { return nil }
        let first = body.index(after: quote)
        guard let seconds = digits(body, from: first) else { return nil }
        let end = body[first...].firstIndex { $0 < UInt8(ascii: "0") || $0 > UInt8(ascii: "9") }
        return end.map { body[$0] == UInt8(ascii: ":") } == true ? seconds : nil
    }

    /// The index after the spaces and colons at `index`.
    static func skipSeparator(_ body: ArraySlice<UInt8>, from start: Int) -> Int {
        var index = start
        while index < body.endIndex, body[index] == UInt8(ascii: " ") || body[index] == UInt8(ascii: ":") {
            index += 1
        }
        return index
    }

    /// The unsigned decimal at `index` (at most 18 digits); `nil` when none.
    static func digits(_ body: ArraySlice<UInt8>, from start: Int) -> Int64? {
        var index = start
        var value: Int64 = 0
        var count = 0
        while index < body.endIndex, body[index] >= UInt8(ascii: "0"), body[index] <= UInt8(ascii: "9"), count < 18 {
            value = value * 10 + Int64(body[index] - UInt8(ascii: "0"))
            count += 1
            index += 1
        }
        return count > 0 ? value : nil
    }

    /// An HTTP answer: the status and the body (everything after the blank line; nchan's
    /// answers here are not chunked: it sends `Content-Length`).
    struct Answer {
        let status: Int
        let body: ArraySlice<UInt8>
    }

    /// Parses `HTTP/1.x NNN …\r\n…\r\n\r\nbody`.
    static func parse(_ bytes: [UInt8]) -> Answer? {
        let prefix = Array("HTTP/1.".utf8)
        guard bytes.count >= 12, Array(bytes[0..<7]) == prefix, bytes[8] == UInt8(ascii: " ") else { return nil }
        var status = 0
        for byte in bytes[9..<12] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            status = status * 10 + Int(byte - UInt8(ascii: "0"))
        }
        let separator = Array("\r\n\r\n".utf8)
        let body = bytes.firstRange(of: separator).map { bytes[$0.upperBound...] } ?? bytes[bytes.endIndex...]
        return Answer(status: status, body: body)
    }

    /// `GET target` on the publisher socket with `Accept: accept`: nginx's answer, whatever its
    /// status (channel info; nchan's stub status at `/status`, `NchanStubStatus`).
    static func get(socket: String, target: String, accept: String) throws(Failure) -> Answer {
        let head = "GET \(target) HTTP/1.1\r\nHost: localhost\r\nAccept: \(accept)\r\nConnection: close\r\n\r\n"
        return try exchange(socket: socket, request: Array(head.utf8))
    }

    /// Connects to `socket`, writes `request`, reads until nginx closes, within the deadline.
    static func exchange(socket path: String, request: [UInt8]) throws(Failure) -> Answer {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw Failure("\(path): socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw Failure("socket(AF_UNIX): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let deadline = monotonicNanoseconds() / 1_000_000 + Int(timeoutMilliseconds)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if rc != 0 {
            guard errno == EINPROGRESS || errno == EAGAIN else {
                throw Failure("connect \(path): \(String(cString: strerror(errno)))")
            }
            try wait(fd, for: Int16(POLLOUT), until: deadline, path)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else { throw Failure("connect \(path): \(String(cString: strerror(error)))") }
        }
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes {
                send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                sent += n
            } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                try wait(fd, for: Int16(POLLOUT), until: deadline, path)
            } else {
                throw Failure("send to \(path): \(String(cString: strerror(errno)))")
            }
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < maxResponseBytes {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += buffer[0..<n]
            } else if n == 0 {
                break
            } else if errno == EAGAIN || errno == EINTR {
                try wait(fd, for: Int16(POLLIN), until: deadline, path)
            } else {
                throw Failure("recv from \(path): \(String(cString: strerror(errno)))")
            }
        }
        guard let answer = parse(received) else { throw Failure("\(path): not an HTTP answer") }
        return answer
    }

    /// Polls `fd` for `events` until `deadline` (monotonic milliseconds).
    static func wait(_ fd: Int32, for events: Int16, until deadline: Int, _ path: String) throws(Failure) {
        while true {
            let left = deadline - monotonicNanoseconds() / 1_000_000
            guard left > 0 else { throw Failure("\(path): no answer within \(timeoutMilliseconds) ms") }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&entry, 1, Int32(left))
            if rc > 0 { return }
            if rc < 0 && errno != EINTR { throw Failure("poll \(path): \(String(cString: strerror(errno)))") }
        }
    }
}
