@testable import FastCGI
import Testing

@Suite("Response serialization") struct ResponseTests {
    private func wire(_ response: Response) -> String {
        String(decoding: response.serialized(), as: UTF8.self)
    }

    @Test("status line, headers in order, Content-Length, blank line, body")
    func layout() {
        let response = Response(status: 201, headers: [Header("Location", "/x"), Header("X-A", "1")],
                                body: Array("hi".utf8))
        #expect(wire(response) == "Status: 201 Created\r\nLocation: /x\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi")
    }

    @Test("json sets Content-Type first and keeps extra headers")
    func json() {
        let response = Response.json(429, #"{"code":"rate_limited"}"#, headers: [Header("Retry-After", "1")])
        #expect(response.headers == [Header("Content-Type", "application/json"), Header("Retry-After", "1")])
        #expect(wire(response) == "Status: 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                    + "Retry-After: 1\r\nContent-Length: 23\r\n\r\n{\"code\":\"rate_limited\"}")
    }

    @Test("Content-Length is computed from the body, never taken from the responder")
    func contentLength() {
        let response = Response(status: 200, headers: [Header("content-length", "999"), Header("Status", "500 x")],
                                body: [0x41])
        #expect(wire(response) == "Status: 200 OK\r\nContent-Length: 1\r\n\r\nA")
    }

    @Test("an empty body still says Content-Length: 0")
    func emptyBody() {
        #expect(wire(Response(status: 404)) == "Status: 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    }

    @Test("Content-Length is written in decimal at every width",
          arguments: [9, 10, 99, 100, 101, 1_000, 65_536, 1_000_000])
    func decimalWidths(size: Int) {
        let bytes = Response(status: 200, body: [UInt8](repeating: 0x41, count: size)).serialized()
        #expect(String(decoding: bytes.prefix(60), as: UTF8.self)
                    .hasPrefix("Status: 200 OK\r\nContent-Length: \(size)\r\n\r\nA"))
        #expect(bytes.count == "Status: 200 OK\r\nContent-Length: \(size)\r\n\r\n".utf8.count + size)
    }

    @Test("CR and LF in names and values cannot inject headers")
    func injection() {
        let response = Response(status: 200, headers: [Header("X-A", "1\r\nSet-Cookie: evil"), Header("X\nB", "2")])
        #expect(wire(response) == "Status: 200 OK\r\nX-A: 1  Set-Cookie: evil\r\nX B: 2\r\nContent-Length: 0\r\n\r\n")
    }

    @Test("204 and 304 carry no Content-Length and no body", arguments: [204, 304])
    func bodyless(status: Int) {
        let text = wire(Response(status: status, body: Array("dropped".utf8)))
        #expect(!text.contains("Content-Length"))
        #expect(text.hasSuffix("\r\n\r\n"))
    }

    @Test("a status outside 100...599 is written as 500", arguments: [0, 99, 600, -1])
    func invalidStatus(status: Int) {
        #expect(wire(Response(status: status)).hasPrefix("Status: 500 Internal Server Error\r\n"))
    }

    @Test("reason phrases for the statuses the service uses", arguments: [
        (200, "OK"), (400, "Bad Request"), (401, "Unauthorized"), (402, "Payment Required"),
        (403, "Forbidden"), (404, "Not Found"), (409, "Conflict"), (413, "Content Too Large"),
        (429, "Too Many Requests"), (500, "Internal Server Error"), (503, "Service Unavailable"),
        (299, "Success"), (499, "Client Error"),
    ])
    func reasons(status: Int, phrase: String) {
        #expect(HTTPReason.phrase(for: status) == phrase)
    }

    @Test("a body containing bytes that are not UTF-8 is sent as is")
    func binaryBody() {
        let bytes = Response(status: 200, body: [0xFF, 0x00, 0xFE]).serialized()
        #expect(Array(bytes.suffix(3)) == [0xFF, 0x00, 0xFE])
    }
}
