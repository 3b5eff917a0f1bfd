import AttestMetrics
@testable import AttestService
import Foundation
import Glibc
import Testing

/// What the monitor pool and the flags pool tell Prometheus about the flag stream: nchan's stub
/// status read from the publisher socket (captured from nginx 1.22.1 with nchan 1.3.6), the stream
/// auth's outcomes and the publishes, each counted into the test's own segment
/// (`ServiceMetrics.scoped`).
@Suite final class FlagStreamMetricsTests {
    /// `GET /status` on an idle publisher server (nginx just started), as captured.
    static let idle = """
        total published messages: 0
        stored messages: 0
        shared memory used: 16K
        shared memory limit: 131072K
        channels: 0
        subscribers: 0
        redis pending commands: 0
        redis connected servers: 0
        redis unhealthy upstreams: 0
        total redis commands sent: 0
        total interprocess alerts received: 0
        interprocess alerts in transit: 0
        interprocess queued alerts: 0
        total interprocess send delay: 0
        total interprocess receive delay: 0
        nchan version: 1.3.6

        """
    /// The same after two publishes (two channels) and with three event streams connected.
    static let busy = """
        total published messages: 2
        stored messages: 2
        shared memory used: 24K
        shared memory limit: 131072K
        channels: 2
        subscribers: 3
        redis pending commands: 0
        redis connected servers: 0
        redis unhealthy upstreams: 0
        total redis commands sent: 0
        total interprocess alerts received: 18
        interprocess alerts in transit: 0
        interprocess queued alerts: 0
        total interprocess send delay: 0
        total interprocess receive delay: 0
        nchan version: 1.3.6

        """

    let directory: String
    let segment: MetricsSegment

    init() throws {
        var template = Array("/tmp/attest-flagstream-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        segment = try MetricsSegment.open(path: directory + "/flags.metrics")
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    static func parse(_ text: String) -> FlagStreamGauges? { NchanStubStatus.parse(Array(text.utf8)[...]) }

    @Test func nchansRealStatusIsRead() {
        #expect(Self.parse(Self.idle) == FlagStreamGauges(subscribers: 0, channels: 0, storedMessages: 0,
                                                          publishedMessages: 0, sharedMemoryUsedBytes: 16 * 1024,
                                                          sharedMemoryLimitBytes: 131_072 * 1024))
        #expect(Self.parse(Self.busy) == FlagStreamGauges(subscribers: 3, channels: 2, storedMessages: 2,
                                                          publishedMessages: 2, sharedMemoryUsedBytes: 24 * 1024,
                                                          sharedMemoryLimitBytes: 131_072 * 1024))
    }

    /// Lines in another order, CRLF, a fraction of a KiB, unknown lines and values: read; a
    /// known line whose value is not a number: left out; no subscribers or channels: not nchan's.
    @Test func theStatusIsReadDefensively() {
        let reordered = "nchan version: 1.4.0\r\nsubscribers: 7\r\nfuture counter: x\r\nchannels: 4\r\n"
            + "shared memory used: 23.5K\r\nno colon here\r\nsubscribers: 9\r\n"
        #expect(Self.parse(reordered) == FlagStreamGauges(subscribers: 7, channels: 4,
                                                          sharedMemoryUsedBytes: 23 * 1024 + 512),
                "the first subscribers line counts")
        let oddValues = Self.busy.replacingOccurrences(of: "stored messages: 2", with: "stored messages: -2")
            .replacingOccurrences(of: "shared memory limit: 131072K", with: "shared memory limit: 128M")
        let odd = Self.parse(oddValues)
        #expect(odd?.storedMessages == nil && odd?.sharedMemoryLimitBytes == nil && odd?.subscribers == 3)
        for broken in ["", "<html>502 Bad Gateway</html>", "channels: 2\n", "subscribers: 3\n",
                       Self.busy.replacingOccurrences(of: "subscribers: 3", with: "subscribers: three"),
                       Self.busy.replacingOccurrences(of: "subscribers: 3", with: "subscribers: 12345678901234567")] {
            #expect(Self.parse(broken) == nil, "\(broken.prefix(40))")
        }
        for (text, value) in [(" 24K", 24 * 1024), ("0.999K", 1022), ("1.5", nil), ("K", nil), ("3K4", nil),
                              ("7", 7), (" 7 ", nil)] as [(String, UInt64?)] {
            #expect(NchanStubStatus.number(Array(text.utf8)[...]) == value, "\(text)")
        }
    }

    /// Every answer of the stream auth counts once under its outcome, with the status it left with.
    @Test func streamAuthAnswersCountByOutcome() throws {
        let pool = try FlagsPoolTests.Pool()
        var badToken = pool.headers()
        badToken["Authorization"] = "Bearer not-a-token"
        try ServiceMetrics.$scoped.withValue(segment) {
            #expect(pool.streamAuth().status == 204)
            #expect(pool.streamAuth(query: "environment=staging").status == 204)
            #expect(pool.streamAuth(headers: badToken).status == 401)
            #expect(pool.streamAuth(query: "environment=a&environment=b").status == 400)
            #expect(pool.call(FlagsPoolTests.request(FlagsStreamAuth.path, method: "POST",
                                                     headers: pool.headers())).status == 405)
            _ = try pool.flow.flag(.block, reason: "fraud")
            #expect(pool.streamAuth().status == 403)
            #expect(pool.flags().status == 403, "another endpoint of the pool: not a stream auth")
        }
        let L = MetricsLayout.self
        let counted = L.flagStreamAuthOutcomes.indices.map { segment.load(L.flagStreamAuths + $0) }
        #expect(counted == [2, 1, 1, 2, 0], "allowed, unauthorized, forbidden, bad_request, error")
    }

    /// A publish nginx takes (201, 202) counts `ok`; another status or no socket counts `failed`.
    @Test func publishesCountOkAndFailed() throws {
        let accepting = try FakePublisher(path: directory + "/ok.sock", answer: "HTTP/1.1 201 Created")
        let refusing = try FakePublisher(path: directory + "/no.sock", answer: "HTTP/1.1 500 Internal Server Error")
        defer { accepting.stop(); refusing.stop() }
        let channel = "ABCDE12345.com.example.app/production"
        ServiceMetrics.$scoped.withValue(segment) {
            #expect(throws: Never.self) { try NchanPublisher.publish(socket: accepting.path, channel: channel,
                                                                     body: FlagStream.emptyAnswer) }
            #expect(throws: NchanPublisher.Failure.self) {
                try NchanPublisher.publish(socket: refusing.path, channel: channel, body: FlagStream.emptyAnswer)
            }
            #expect(throws: NchanPublisher.Failure.self) {
                try NchanPublisher.publish(socket: self.directory + "/missing.sock", channel: channel, body: [])
            }
        }
        let L = MetricsLayout.self
        #expect(segment.load(L.flagPublishes) == 1 && segment.load(L.flagPublishes + 1) == 2)
        #expect(accepting.requests.first?.hasPrefix("POST /pub/\(channel) HTTP/1.1\r\n") == true)
    }

    /// At a scrape the monitor pool asks the publisher socket in the pools' socket directory for
    /// nchan's status: its gauges when it answers, `flag_stream_up 0` and none when there is no
    /// socket or the answer is not nchan's status.
    @Test func theScrapeReadsNchanFromThePublisherSocket() throws {
        let flow = try DeviceFlow()
        flow.context.poolSockets = directory
        func scrape() -> String {
            String(decoding: Endpoint.monitor.handle(Fixture.request("GET", "/metrics"), flow.context).body,
                   as: UTF8.self)
        }
        let none = scrape()
        #expect(none.contains("\nattestedge_flag_stream_up 0\n"))
        #expect(!none.contains("\nattestedge_flag_stream_subscribers "))
        let socket = FlagChannel.publishSocket(socketDirectory: directory)
        do {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.busy.utf8.count)\r\n\r\n"
            let nchan = try FakePublisher(path: socket, answer: head + Self.busy)
            let text = scrape()
            #expect(text.contains("\nattestedge_flag_stream_up 1\n"))
            #expect(text.contains("\nattestedge_flag_stream_subscribers 3\n"))
            #expect(text.contains("\nattestedge_flag_stream_channels 2\n"))
            #expect(text.contains("\nattestedge_flag_stream_messages 2\n"))
            #expect(text.contains("\nattestedge_flag_stream_published_messages_total 2\n"))
            #expect(text.contains("\nattestedge_flag_stream_shared_memory_limit_bytes 134217728\n"))
            #expect(nchan.requests.first?.hasPrefix("GET /status HTTP/1.1\r\n") == true)
            nchan.stop()
        }
        let html = try FakePublisher(path: socket, answer: "HTTP/1.1 200 OK\r\n\r\n<html>not nchan</html>")
        defer { html.stop() }
        let text = scrape()
        #expect(text.contains("\nattestedge_flag_stream_up 0\n"))
        #expect(!text.contains("\nattestedge_flag_stream_channels "))
    }
}

/// A stand-in for nginx's publisher server on a unix socket: each connection's request is read
/// (its head, then `Content-Length` bytes) and recorded, `answer` is sent and the connection
/// closed, until `stop`.
final class FakePublisher: @unchecked Sendable {
    let path: String
    private let listener: Int32
    private let lock = NSLock()
    private var received: [String] = []
    private let done = DispatchSemaphore(value: 0)

    var requests: [String] { lock.withLock { received } }

    init(path: String, answer: String) throws {
        self.path = path
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard listener >= 0, bound == 0, listen(listener, 16) == 0 else {
            throw FixtureError("cannot listen on \(path)")
        }
        let reply = Array(answer.utf8)
        Thread.detachNewThread { [listener] in
            while true {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { break }
                let request = Self.readRequest(fd)
                self.lock.withLock { self.received.append(request) }
                _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(fd)
            }
            self.done.signal()
        }
    }

    /// Stops accepting and removes the socket file.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        done.wait()
        close(listener)
        unlink(path)
    }

    static func readRequest(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let length = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text[..<end.upperBound].utf8.count >= length { return text }
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return text }
            bytes += buffer[0..<n]
        }
    }
}
