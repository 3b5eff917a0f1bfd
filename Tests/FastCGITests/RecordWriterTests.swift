@testable import FastCGI
import Testing

@Suite("FastCGI records a worker writes") struct RecordWriterTests {
    @Test("a response: STDOUT padded to 8, the empty STDOUT, END_REQUEST complete with status 0")
    func smallResponse() {
        let bytes = RecordWriter.response(Array("Status: 200 OK\r\n\r\n".utf8), requestID: 0x0102)
        #expect(Array(bytes.prefix(8)) == [1, 6, 1, 2, 0, 18, 6, 0], "STDOUT header: 18 bytes, 6 padding")
        #expect(Array(bytes[8..<26]) == Array("Status: 200 OK\r\n\r\n".utf8))
        #expect(Array(bytes[26..<32]) == [0, 0, 0, 0, 0, 0])
        #expect(Array(bytes[32...]) == [1, 6, 1, 2, 0, 0, 0, 0, 1, 3, 1, 2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test("a response over 65535 bytes is split into records of at most 65535")
    func largeResponse() throws {
        let stdout = (0..<140_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let records = try #require(Records.replies(RecordWriter.response(stdout, requestID: 1)))
        #expect(records.map(\.content.count) == [65_535, 65_535, 8_930, 0, 8])
        #expect(records.map(\.type) == [6, 6, 6, 6, 3])
        #expect(records.prefix(3).flatMap(\.content) == stdout)
    }

    @Test("an empty response is the empty STDOUT and END_REQUEST")
    func emptyResponse() {
        #expect(RecordWriter.response([], requestID: 1) == [1, 6, 0, 1, 0, 0, 0, 0,
                                                            1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test("END_REQUEST carries the protocol status", arguments: [
        (ProtocolStatus.requestComplete, UInt8(0)), (.cantMultiplexConnection, 1), (.overloaded, 2), (.unknownRole, 3),
    ])
    func endRequest(status: ProtocolStatus, byte: UInt8) {
        #expect(RecordWriter.endRequest(requestID: 9, status: status)
                    == [1, 3, 0, 9, 0, 8, 0, 0, 0, 0, 0, 0, byte, 0, 0, 0])
    }
}
