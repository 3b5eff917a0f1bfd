@testable import HTTPClient
import Testing

/// curl hands each header line over with its CRLF; the value kept must not end in it.
@Suite struct HeaderValueTests {
    @Test("a header value loses its surrounding blanks and its line end, CRLF included")
    func trimmed() {
        #expect(" text/plain; version=0.0.4\r\n".trimmedHeaderValue == "text/plain; version=0.0.4")
        #expect("\tclose \n".trimmedHeaderValue == "close")
        #expect("a b\r\n\r\n".trimmedHeaderValue == "a b")
    }
}
