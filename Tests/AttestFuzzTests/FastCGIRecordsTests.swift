@testable import AttestFuzz
import Testing

/// The fastcgi target's guard against the libfcgi abort it found (see `FastCGITarget`).
@Suite struct FastCGIRecordsTests {
    @Test func readsParamLengthsAsLibfcgiDoes() {
        let stream = FastCGIRecords.request(params: [("REQUEST_METHOD", "GET"), ("HTTP_X", String(repeating: "v", count: 300))], body: [])
        #expect(FastCGIRecords.largestParamLength(stream[...]) == 300, "the 300-byte value is the largest (4-byte length form)")
        #expect(FastCGIRecords.largestParamLength([][...]) == 0, "no records, no params")
    }

    @Test func flagsTheDeclaredGigabyteParam() {
        // PARAMS content: nameLength 0x60E0E0E0, valueLength 0x60E0E0E0, then a few bytes.
        let content: [UInt8] = [0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0x41, 0x42]
        let stream = FastCGIRecords.record(type: 1, requestID: 1, content: [0, 1, 0, 0, 0, 0, 0, 0])
            + FastCGIRecords.record(type: 4, requestID: 1, content: content)
        #expect(FastCGIRecords.largestParamLength(stream[...]) == 0x60E0_E0E0, "the declared length is read, not the bytes present")
        #expect(FastCGIRecords.largestParamLength(stream[...]) > FastCGITarget.maxParamLength, "the target skips it")
    }

    /// Second campaign find: the same abort through a BEGIN_REQUEST with padding, which
    /// libfcgi reads as the next header.
    @Test func readsTheBeginRecordsPaddingAsLibfcgiDoes() {
        let params: [UInt8] = [0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0]
        let begin: [UInt8] = [1, 1, 0, 1, 0, 8, 8, 0] + [0, 1, 0, 0, 0, 0, 0, 0]
        let hidden = FastCGIRecords.record(type: 4, requestID: 1, content: params)
        let stream = begin + hidden.prefix(8) + hidden.dropFirst(8)
        #expect(FastCGIRecords.largestParamLength(stream[...], skipBeginPadding: true) == 0,
                "framed by the protocol, the PARAMS header is the BEGIN record's padding")
        #expect(FastCGIRecords.largestParamLength(stream[...]) == 0x60E0_E0E0, "as libfcgi reads it, it declares 1.6 GB")
    }

    /// Third campaign find: a 4-byte length form anywhere counts (libfcgi read one from a
    /// record with request id 0).
    @Test func countsALengthFormAnywhere() {
        let stream: [UInt8] = [1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 9, 0, 0xE0, 0xE0, 0xE0, 0xE0, 0xE0]
        #expect(FastCGIRecords.largestParamLength(stream[...]) >= 0x60E0_E0E0, "the bytes after the null-id header")
        let ascii = FastCGIRecords.request(params: [("REQUEST_METHOD", "POST")], body: Array(#"{"a":"b"}"#.utf8))
        #expect(FastCGIRecords.largestParamLength(ascii[...]) < FastCGITarget.maxParamLength, "an ordinary request is fuzzed")
    }
}

