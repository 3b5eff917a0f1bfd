@testable import FastCGI
import Glibc
import Testing

/// The three streams with which the fastcgi fuzz target made Debian's libfcgi 2.4.2 abort a
/// worker (it allocated a declared parameter length of gigabytes and asserted the
/// allocation): `Tests/FuzzCorpus/fastcgi/known-libfcgi-*`. Our reader refuses or answers
/// each without allocating anything declared, and the worker stays up.
@Suite("Regression: the streams that aborted libfcgi") struct LibfcgiRegressionTests {
    static let corpus = "/" + #filePath.split(separator: "/").dropLast(2).joined(separator: "/")
        + "/FuzzCorpus/fastcgi/"

    static func input(_ name: String) throws -> [UInt8] {
        let path = corpus + name
        guard let file = fopen(path, "rb") else { throw FastCGIError(.socket, "cannot open \(path)") }
        defer { fclose(file) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case let n = fread(&chunk, 1, chunk.count, file), n > 0 { bytes += chunk[..<n] }
        return bytes
    }

    @Test("each is refused by the parser before any params exist", arguments: [
        // The PARAMS content runs into bytes whose version is 0xE0, where libfcgi read a
        // 0x60E0E0E0-byte length from the next pair.
        ("known-libfcgi-huge-param", [RequestParser.Event](), FastCGIError?.some(FastCGIError(.protocolViolation, ""))),
        // BEGIN_REQUEST with 11 padding bytes: skipped, the next "header" has version 0x45.
        ("known-libfcgi-huge-param-begin-padding", [], FastCGIError(.protocolViolation, "")),
        // A record of type 0 with request id 0: answered with UNKNOWN_TYPE; then the stream ends.
        ("known-libfcgi-huge-param-null-request-id", [.reply(RecordWriter.unknownType(0))], nil),
    ])
    func parser(name: String, events: [RequestParser.Event], error: FastCGIError?) throws {
        let bytes = try Self.input(name)
        for chunk in [1, 7, bytes.count] {
            let result = Records.events(bytes, chunk: chunk)
            #expect(result.events == events, "\(name) in chunks of \(chunk)")
            #expect(result.error == error, "\(name) in chunks of \(chunk)")
        }
    }

    @Test("over a socket each gets a clean close (and only well-formed replies), and nothing reaches the responder",
          arguments: ["known-libfcgi-huge-param", "known-libfcgi-huge-param-begin-padding",
                      "known-libfcgi-huge-param-null-request-id"])
    func socket(name: String) throws {
        let listener = TestListener()
        let client = listener.connect()
        defer { close(client) }
        TestListener.write(client, try Self.input(name))
        shutdown(client, Int32(SHUT_WR))
        var responder: any Responder = LengthResponder()
        #expect(SingleConnection.serve(listenFD: listener.fd, bodyLimit: 1024, responder: &responder) == nil)
        #expect((responder as? LengthResponder)?.seen.isEmpty == true)
        let replies = try #require(Records.replies(TestListener.readAll(client).bytes))
        #expect(replies.allSatisfy { $0.type == 11 }, "\(name): only UNKNOWN_TYPE replies")
    }
}
