@testable import AttestFuzz
import Testing

/// The fastcgi target's record builders and its reader of the worker's replies.
@Suite struct FastCGIRecordsTests {
    @Test func buildsRecordsPaddedToEight() {
        let record = FastCGIRecords.record(type: 5, requestID: 0x0102, content: [1, 2, 3])
        #expect(record == [1, 5, 1, 2, 0, 3, 5, 0, 1, 2, 3, 0, 0, 0, 0, 0], "header, 3 content bytes, 5 padding bytes")
        let stream = FastCGIRecords.stream(type: 5, requestID: 1, [UInt8](repeating: 7, count: 70_000))
        #expect(FastCGIRecords.replies(stream)?.map(\.content.count) == [65_535, 4_465, 0],
                "split at 65535, ended by an empty record")
    }

    @Test func readsWellFormedReplies() {
        let bytes = FastCGIRecords.record(type: 6, requestID: 1, content: Array("Status: 200 OK\r\n\r\n".utf8))
            + FastCGIRecords.record(type: 6, requestID: 1, content: [])
            + FastCGIRecords.record(type: 3, requestID: 1, content: [0, 0, 0, 0, 0, 0, 0, 0])
        let replies = FastCGIRecords.replies(bytes)
        #expect(replies?.map(\.type) == [6, 6, 3])
        #expect(replies?.first?.content == Array("Status: 200 OK\r\n\r\n".utf8))
        #expect(FastCGIRecords.replies([]) == [], "no bytes, no records")
    }

    @Test func refusesMalformedReplies() {
        let record = FastCGIRecords.record(type: 6, requestID: 1, content: [1, 2, 3])
        #expect(FastCGIRecords.replies(Array(record.dropLast())) == nil, "a record cut short")
        #expect(FastCGIRecords.replies([2] + record.dropFirst()) == nil, "version 2")
        #expect(FastCGIRecords.replies([1, 6, 0, 1, 0, 3, 0, 0, 1, 2, 3]) == nil, "content not padded to 8")
        #expect(FastCGIRecords.replies(Array(record.dropLast()) + [9]) == nil, "padding that is not zero")
    }

    /// The inputs that aborted libfcgi 2.4.2 now run through the target like any other (it
    /// traps on a property violation).
    @Test(arguments: ["known-libfcgi-huge-param", "known-libfcgi-huge-param-begin-padding",
                      "known-libfcgi-huge-param-null-request-id"])
    func servesTheInputsThatAbortedLibfcgi(_ name: String) throws {
        let path = "/" + CorpusReplayTests.corpus + "/FuzzCorpus/fastcgi/" + name
        let input = try #require(FuzzFiles.read(path), "read \(path)")
        let target = try #require(FuzzTargets.make("fastcgi"))
        target.run(input[...])
    }
}
