@testable import FastCGI
import Glibc
import Testing

@Suite("FastCGI connections over a unix socket") struct ConnectionTests {
    private static var quick: Connection.Timeouts {
        var timeouts = Connection.Timeouts()
        timeouts.readMilliseconds = 200
        timeouts.drainMilliseconds = 200
        timeouts.requestSeconds = 2
        return timeouts
    }

    private func answer(_ listener: TestListener, bodyLimit: Int = 1024, timeouts: Connection.Timeouts = quick,
                        _ responder: inout LengthResponder) -> (Connection.Accepted, Response?) {
        let connection = Connection(listenFD: listener.fd, timeouts: timeouts)
        let accepted = connection.accept()
        guard case .request(let params) = accepted else { return (accepted, nil) }
        var any: any Responder = responder
        let response = Worker.serve(connection, params: params, bodyLimit: bodyLimit, responder: &any)
        responder = any as! LengthResponder
        return (accepted, response)
    }

    @Test("a request is answered with STDOUT records, the empty STDOUT and END_REQUEST, then EOF")
    func answered() throws {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.request([("REQUEST_METHOD", "POST"), ("CONTENT_LENGTH", "5"),
                                                    ("REQUEST_ID", "r1")],
                                                   body: Array("hello".utf8), id: 3))
        var responder = LengthResponder()
        let (_, response) = answer(listener, &responder)
        #expect(response?.status == 200)
        #expect(responder.seen.first?.body == Array("hello".utf8))
        #expect(responder.seen.first?.requestID == "r1")
        let (bytes, error) = TestListener.readAll(client)
        #expect(error == 0, "EOF, not a reset")
        let records = try #require(Records.replies(bytes))
        #expect(records.map(\.type) == [6, 6, 3] && records.allSatisfy { $0.id == 3 })
        #expect(String(decoding: records[0].content, as: UTF8.self).hasSuffix(#"{"length":5}"#))
    }

    @Test("nothing queued: accept returns at once")
    func nothingQueued() {
        let listener = TestListener()
        guard case .nothingQueued = Connection(listenFD: listener.fd).accept() else {
            Issue.record("expected nothingQueued"); return
        }
    }

    @Test("a peer that connects and closes is dropped without an error")
    func peerCloses() {
        let listener = TestListener()
        close(listener.connect())
        guard case .dropped(nil) = Connection(listenFD: listener.fd, timeouts: Self.quick).accept() else {
            Issue.record("expected dropped(nil)")
            return
        }
    }

    @Test("nothing is read past the request's deadline, even when bytes are waiting")
    func deadlineWhileBytesAreWaiting() {
        // A peer that keeps the socket readable (records that carry nothing, another request
        // id's) never lets a wait time out; the deadline must stop the reading itself. With a
        // deadline already past, even a whole request waiting in the socket is not read.
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.begin() + Records.record(8) + Records.record(8, id: 9)
                           + Records.stream(4, Records.pairs([("REQUEST_METHOD", "GET")])) + Records.stream(5, []))
        var timeouts = Self.quick
        timeouts.requestSeconds = 0
        let accepted = Connection(listenFD: listener.fd, timeouts: timeouts).accept()
        guard case .dropped(let error?) = accepted else { Issue.record("expected a timeout, got \(accepted)"); return }
        #expect(error == FastCGIError(.timeout, ""))
    }

    @Test("a request aborted while its body is read is not answered: END_REQUEST alone")
    func abortedDuringTheBody() throws {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        let params = Records.pairs([("REQUEST_METHOD", "POST"), ("CONTENT_LENGTH", "2"), ("REQUEST_ID", "r1")])
        TestListener.write(client, Records.begin() + Records.record(4, params) + Records.record(4)
                           + Records.record(5, Array("{}".utf8)) + Records.record(2))
        var responder = LengthResponder()
        let (accepted, response) = answer(listener, &responder)
        guard case .request = accepted else { Issue.record("expected a request, got \(accepted)"); return }
        #expect(response == nil && responder.seen.isEmpty, "the responder never saw the aborted request")
        let (bytes, _) = TestListener.readAll(client)
        let records = try #require(Records.replies(bytes))
        #expect(records.map(\.type) == [3], "END_REQUEST alone, no STDOUT")
    }

    @Test("a stalled peer is dropped after the read timeout, and sees EOF")
    func stalledPeer() {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.begin() + Array(Records.record(4, Records.pairs([("A", "b")])).prefix(10)))
        let started = MonotonicClock.now()
        let accepted = Connection(listenFD: listener.fd, timeouts: Self.quick).accept()
        let elapsed = MonotonicClock.now() - started
        guard case .dropped(let error?) = accepted else { Issue.record("expected a timeout, got \(accepted)"); return }
        #expect(error == FastCGIError(.timeout, ""))
        #expect(elapsed >= 0.15 && elapsed < 1.5, "gave up after \(elapsed) s with a 200 ms read timeout")
        #expect(TestListener.readAll(client).bytes.isEmpty)
    }

    @Test("a peer that stalls inside the body is answered with what came, after the read timeout")
    func stalledBody() {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.begin() + Records.stream(4, Records.pairs([("CONTENT_LENGTH", "10")]))
                               + Records.record(5, [1, 2, 3]))
        var responder = LengthResponder()
        let (_, response) = answer(listener, &responder)
        #expect(response?.status == 200 && responder.seen.first?.body == [1, 2, 3])
        #expect(Records.replies(TestListener.readAll(client).bytes)?.last?.type == 3)
    }

    @Test("a body over the limit is answered 413 while the peer is still sending it; the rest is drained, no reset")
    func bodyTooLarge() throws {
        let listener = TestListener()
        let client = listener.connect(nonBlocking: true)
        defer { close(client) }
        let head = Records.begin() + Records.stream(4, Records.pairs([("CONTENT_LENGTH", "100000")]))
        let body = Records.stream(5, [UInt8](repeating: 0x41, count: 100_000), split: 16_384)
        let sent = TestListener.write(client, head + body)
        #expect(sent > head.count, "part of the body is on its way (\(sent) bytes)")
        var responder = LengthResponder()
        let (_, response) = answer(listener, &responder)
        #expect(response?.status == 413)
        #expect(responder.seen.first?.bodyTooLarge == true)
        let (bytes, error) = TestListener.readAll(client)
        #expect(error == 0, "the answer is followed by EOF, not a reset (errno \(error))")
        let records = try #require(Records.replies(bytes))
        #expect(records.map(\.type) == [6, 6, 3])
    }

    @Test("the same with the peer's write side closed: draining ends at its EOF")
    func bodyTooLargeThenEOF() {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.request([("CONTENT_LENGTH", "5000")],
                                                   body: [UInt8](repeating: 1, count: 5000)))
        shutdown(client, Int32(SHUT_WR))
        var responder = LengthResponder()
        var patient = Self.quick
        patient.drainMilliseconds = 3_000
        let started = MonotonicClock.now()
        let (_, response) = answer(listener, bodyLimit: 100, timeouts: patient, &responder)
        #expect(response?.status == 413)
        #expect(MonotonicClock.now() - started < 1.5, "no 3 s wait: the drain met EOF")
        #expect(Records.replies(TestListener.readAll(client).bytes)?.map(\.type) == [6, 6, 3])
    }

    @Test("a management record before the request is answered on the connection, then the request")
    func getValuesThenRequest() throws {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.record(9, id: 0, Records.pairs([("FCGI_MPXS_CONNS", "")]))
                               + Records.request([("A", "b")]))
        var responder = LengthResponder()
        let (_, response) = answer(listener, &responder)
        #expect(response?.status == 200)
        let records = try #require(Records.replies(TestListener.readAll(client).bytes))
        #expect(records.map(\.type) == [10, 6, 6, 3])
    }

    @Test("another role is refused with END_REQUEST UNKNOWN_ROLE and the connection closed")
    func unknownRole() throws {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, Records.begin(role: 2) + Records.stream(4, []))
        var responder = LengthResponder()
        let (accepted, response) = answer(listener, &responder)
        guard case .dropped(nil) = accepted, response == nil else {
            Issue.record("expected dropped, got \(accepted)"); return
        }
        let records = try #require(Records.replies(TestListener.readAll(client).bytes))
        #expect(records.count == 1 && records[0].type == 3 && records[0].content[4] == 3)
    }

    @Test("params over 64 KiB: the connection is closed without an answer")
    func paramsTooLarge() {
        let listener = TestListener()
        let client = listener.connect(nonBlocking: true)
        defer { close(client) }
        TestListener.write(client, Records.begin()
                               + Records.stream(4, Records.pairs([("HTTP_X", String(repeating: "x", count: 70_000))])))
        let accepted = Connection(listenFD: listener.fd, timeouts: Self.quick).accept()
        guard case .dropped(let error?) = accepted else { Issue.record("expected dropped, got \(accepted)"); return }
        #expect(error == FastCGIError(.paramsTooLarge, ""))
        #expect(TestListener.readAll(client).bytes.isEmpty)
    }
}
