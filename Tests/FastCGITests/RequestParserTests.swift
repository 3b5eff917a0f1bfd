@testable import FastCGI
import Testing

@Suite("FastCGI record stream → request events") struct RequestParserTests {
    static let params = [("REQUEST_METHOD", "POST"), ("DOCUMENT_URI", "/api/v1/attestation/validate"),
                         ("CONTENT_LENGTH", "11")]
    static let body = Array(#"{"a":"bcd"}"#.utf8)
    static let expected: [RequestParser.Event] = [.params(Params(Dictionary(uniqueKeysWithValues: params))),
                                                  .stdin(body[...]), .stdinEnd]

    @Test("BEGIN_REQUEST, PARAMS, STDIN in one piece: params, body, end")
    func wholeRequest() {
        let (events, error) = Records.events(Records.request(Self.params, body: Self.body))
        #expect(error == nil)
        #expect(events == Self.expected)
    }

    @Test("the same stream arriving byte by byte, and in every other chunk size, gives the same events",
          arguments: [1, 2, 3, 7, 8, 9, 16, 100])
    func fragmented(chunk: Int) {
        let (events, error) = Records.events(Records.request(Self.params, body: Self.body), chunk: chunk)
        #expect(error == nil)
        #expect(Records.joined(events) == Self.expected, "chunks of \(chunk) bytes")
    }

    @Test("padding is skipped, whatever its length (BEGIN_REQUEST's too, which libfcgi 2.4.2 read as a header)")
    func padding() {
        let stream = Records.record(1, [0, 1, 0, 0, 0, 0, 0, 0], padding: 11)
            + Records.record(4, Records.pairs(Self.params), padding: 255) + Records.record(4, padding: 3)
            + Records.record(5, Self.body, padding: 0) + Records.record(5, padding: 200)
        let (events, error) = Records.events(stream)
        #expect(error == nil)
        #expect(events == Self.expected)
    }

    @Test("4-byte lengths, split across PARAMS records in the middle of a length")
    func fourByteLengths() {
        let name = "HTTP_" + String(repeating: "N", count: 150)
        let value = String(repeating: "v", count: 300)
        let pairs = Records.pairs([(name, value), ("SHORT", "x")])
        #expect(pairs.prefix(8) == [0x80, 0, 0, 155, 0x80, 0, 1, 44], "both lengths in the 4-byte form")
        let stream = Records.begin() + Records.record(4, Array(pairs.prefix(6)))
            + Records.record(4, Array(pairs.dropFirst(6))) + Records.record(4) + Records.stream(5, [])
        let (events, error) = Records.events(stream)
        #expect(error == nil)
        #expect(events == [.params([name: value, "SHORT": "x"]), .stdinEnd])
    }

    @Test("a declared length beyond the bytes present is refused, never allocated (what aborted libfcgi)")
    func oversizeDeclaredLength() {
        // nameLength 0x60E0E0E0 and valueLength 0x60E0E0E0: 3.2 GB declared, 2 bytes present.
        let content: [UInt8] = [0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0x41, 0x42]
        let (events, error) = Records.events(Records.begin() + Records.record(4, content) + Records.record(4))
        #expect(events.isEmpty)
        #expect(error == FastCGIError(.protocolViolation, ""))
        let waiting = Records.events(Records.begin() + Records.record(4, content))
        #expect(waiting.events.isEmpty && waiting.error == nil,
                "an unfinished PARAMS stream waits for more; nothing is decoded yet")
        let (_, cut) = Records.events(Records.begin() + Records.record(4, [0x80, 0, 1]) + Records.record(4))
        #expect(cut == FastCGIError(.protocolViolation, ""), "a 4-byte length cut short")
    }

    @Test("the PARAMS stream is capped at 64 KiB: exactly the cap is read, one byte more is refused")
    func paramsCap() {
        let atCap = [UInt8](repeating: 0, count: RequestParser.maxParamsBytes)  // 65536 empty pairs
        let accepted = Records.events(Records.begin() + Records.stream(4, atCap, split: 40_000) + Records.stream(5, []))
        #expect(accepted.error == nil)
        #expect(accepted.events == [.params(["": ""]), .stdinEnd])
        let over = Records.events(Records.begin() + Records.stream(4, atCap + [0], split: 40_000))
        #expect(over.events.isEmpty)
        #expect(over.error == FastCGIError(.paramsTooLarge, ""))
    }

    @Test("a body in many STDIN records arrives in order, then its end")
    func multipleStdinRecords() {
        let body = (0..<20_000).map { UInt8(truncatingIfNeeded: $0) }
        let (events, error) = Records.events(Records.begin() + Records.stream(4, Records.pairs([("A", "1")]))
                                                 + Records.stream(5, body, split: 3_000))
        #expect(error == nil)
        #expect(events.count == 1 + 7 + 1, "params, 7 body records, end")
        #expect(Records.joined(events) == [.params(["A": "1"]), .stdin(body[...]), .stdinEnd])
    }

    @Test("GET_VALUES is answered with the three values asked for that the worker knows, each once")
    func getValues() throws {
        let asked = Records.pairs([("FCGI_MAX_CONNS", ""), ("FCGI_MPXS_CONNS", ""), ("FCGI_OTHER", ""),
                                   ("FCGI_MAX_REQS", ""), ("FCGI_MAX_CONNS", "")])
        let (events, error) = Records.events(Records.record(9, id: 0, asked), parser: RequestParser(maxConnections: 4))
        #expect(error == nil)
        guard case .reply(let bytes)? = events.first, events.count == 1 else {
            Issue.record("events: \(events)"); return
        }
        let records = try #require(Records.replies(bytes))
        #expect(records.count == 1 && records[0].type == 10 && records[0].id == 0,
                "one GET_VALUES_RESULT, request id 0")
        var values = [String: String]()
        try NameValuePairs.decode(records[0].content[...]) {
            values[String(decoding: $0, as: UTF8.self)] = String(decoding: $1, as: UTF8.self)
        }
        #expect(values == ["FCGI_MAX_CONNS": "4", "FCGI_MAX_REQS": "1", "FCGI_MPXS_CONNS": "0"])
    }

    @Test("unknown record types get UNKNOWN_TYPE, on a management record or a request's, and reading goes on")
    func unknownTypes() {
        let stream = Records.record(1, id: 0, [0, 1, 0, 0, 0, 0, 0, 0]) + Records.begin()
            + Records.record(42, [1, 2, 3]) + Records.record(0, id: 0) + Records.stream(4, Records.pairs([("A", "b")]))
            + Records.stream(5, [])
        let (events, error) = Records.events(stream)
        #expect(error == nil)
        #expect(events == [.reply(RecordWriter.unknownType(1)), .reply(RecordWriter.unknownType(42)),
                           .reply(RecordWriter.unknownType(0)), .params(["A": "b"]), .stdinEnd])
        #expect(RecordWriter.unknownType(42) == [1, 11, 0, 0, 0, 8, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test("a role other than responder is refused with END_REQUEST UNKNOWN_ROLE", arguments: [UInt16(2), 3, 0, 0xFFFF])
    func unknownRole(role: UInt16) {
        let (events, error) = Records.events(Records.begin(role: role, id: 7)
                                                 + Records.stream(4, Records.pairs([("A", "b")])))
        #expect(error == nil)
        #expect(events == [.refused([1, 3, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0])], "role \(role)")
    }

    @Test("one request per connection: another BEGIN_REQUEST gets CANT_MPX_CONN, the same id again is a violation")
    func multiplexing() {
        let stream = Records.begin(id: 1) + Records.begin(id: 2) + Records.stream(4, Records.pairs([("A", "b")]))
            + Records.stream(5, [])
        let (events, error) = Records.events(stream)
        #expect(error == nil)
        #expect(events == [.reply(RecordWriter.endRequest(requestID: 2, status: .cantMultiplexConnection)),
                           .params(["A": "b"]), .stdinEnd])
        #expect(Records.events(Records.begin(id: 1) + Records.begin(id: 1)).error
                    == FastCGIError(.protocolViolation, ""))
    }

    @Test("records of an inactive request id, before BEGIN_REQUEST or for another id, are ignored; so is DATA")
    func inactiveIDs() {
        let stream = Records.record(4, id: 1, Records.pairs([("X", "y")])) + Records.begin(id: 1)
            + Records.record(4, id: 9, Records.pairs([("X", "y")])) + Records.record(5, id: 9, [1])
            + Records.record(2, id: 9)
            + Records.stream(4, Records.pairs([("A", "b")])) + Records.record(8, [1, 2]) + Records.stream(5, [])
        let (events, error) = Records.events(stream)
        #expect(error == nil)
        #expect(events == [.params(["A": "b"]), .stdinEnd])
    }

    @Test("ABORT_REQUEST for the active request ends it")
    func abort() {
        let (events, error) = Records.events(Records.begin() + Records.record(4, Records.pairs([("A", "b")]))
                                                 + Records.record(2))
        #expect(error == nil)
        #expect(events == [.aborted])
    }

    @Test("every prefix of a request (a truncated stream) gives a prefix of its events and no error")
    func truncated() {
        let stream = Records.request(Self.params, body: Self.body)
        for cut in 0..<stream.count {
            let (events, error) = Records.events(Array(stream.prefix(cut)))
            #expect(error == nil, "cut at \(cut)")
            #expect(Array(Self.expected.prefix(events.count)) == events, "cut at \(cut)")
            #expect(events.count < 3, "cut at \(cut): the body's end is the last record")
        }
    }

    static let violating: [(String, [UInt8])] = [
        ("version 0", [0, 1, 0, 1, 0, 8, 0, 0]),
        ("BEGIN_REQUEST of 7 bytes", Records.record(1, [0, 1, 0, 0, 0, 0, 0])),
        ("STDIN before the params' end", Records.begin() + Records.record(5, [1])),
        ("PARAMS after the params' end", Records.begin() + Records.stream(4, []) + Records.record(4, [1, 0])),
        ("STDIN after the body's end", Records.request([]) + Records.record(5, [1])),
        ("STDOUT from the web server", Records.begin() + Records.record(6, [1])),
        ("END_REQUEST from the web server", Records.begin() + Records.record(3, [0, 0, 0, 0, 0, 0, 0, 0])),
    ]

    @Test("streams the protocol does not allow are refused, and stay refused", arguments: violating)
    func violations(name: String, stream: [UInt8]) {
        var parser = RequestParser()
        parser.consume(stream)
        var thrown: FastCGIError?
        do { while try parser.next() != nil {} } catch { thrown = error }
        #expect(thrown == FastCGIError(.protocolViolation, ""), "\(name)")
        #expect(throws: FastCGIError(.protocolViolation, ""), "\(name): sticky") { try parser.next() }
    }

    @Test("a bad version fails on the header alone, without waiting for the declared content")
    func versionFailsEarly() {
        #expect(Records.events([2, 5, 0, 1, 0xFF, 0xFF, 0xFF, 0]).error == FastCGIError(.protocolViolation, ""))
    }

    @Test("at most 32 management replies per connection")
    func replyCap() {
        let one = Records.record(9, id: 0, Records.pairs([("FCGI_MAX_REQS", "")]))
        let within = Records.events(Array([[UInt8]](repeating: one, count: RequestParser.maxReplies).joined()))
        #expect(within.error == nil && within.events.count == RequestParser.maxReplies)
        let over = Records.events(Array([[UInt8]](repeating: one, count: RequestParser.maxReplies + 1).joined()))
        #expect(over.error == FastCGIError(.protocolViolation, ""))
    }

    @Test("reset starts a new connection")
    func reset() {
        var parser = RequestParser()
        parser.consume([0, 0, 0, 0, 0, 0, 0, 0])
        #expect(throws: FastCGIError(.protocolViolation, "")) { try parser.next() }
        parser.reset()
        #expect(Records.events(Records.request(Self.params, body: Self.body), parser: parser).events == Self.expected)
    }
}
