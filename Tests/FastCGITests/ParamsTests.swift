@testable import FastCGI
import Glibc
import Testing

@Suite("FastCGI params and body plan") struct ParamsTests {
    /// Builds a NULL-terminated C array of strings, as libfcgi's `envp`.
    private func withEnvironment<T>(_ entries: [[UInt8]], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        let strings = entries.map { bytes -> UnsafeMutablePointer<CChar> in
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
            p[bytes.count] = 0
            return p
        }
        defer { strings.forEach { $0.deallocate() } }
        let array: [UnsafeMutablePointer<CChar>?] = strings + [nil]
        return array.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    @Test("NAME=value pairs; the name ends at the first =")
    func pairs() {
        let params = withEnvironment([Array("REQUEST_METHOD=POST".utf8), Array("QUERY_STRING=a=1&b=2".utf8),
                                      Array("HTTP_X_EMPTY=".utf8), Array("NOEQUALS".utf8)]) {
            FCGXConnection.params(fromEnvironment: $0)
        }
        #expect(params == ["REQUEST_METHOD": "POST", "QUERY_STRING": "a=1&b=2", "HTTP_X_EMPTY": ""])
    }

    @Test("invalid UTF-8 in a value is repaired, not dropped")
    func invalidUTF8() {
        let params = withEnvironment([Array("HTTP_X=".utf8) + [0xFF, 0x41]]) { FCGXConnection.params(fromEnvironment: $0) }
        #expect(params["HTTP_X"] == "\u{FFFD}A")
    }

    @Test("a repeated name is combined as RFC 9110 says, never one value silently dropped")
    func repeatedNames() {
        let params = withEnvironment([Array("HTTP_X_TEAM_ID=ABCDE12345".utf8), Array("HTTP_X_TEAM_ID=OTHER12345".utf8),
                                      Array("HTTP_ACCEPT=a".utf8)]) { FCGXConnection.params(fromEnvironment: $0) }
        #expect(params["HTTP_X_TEAM_ID"] == "ABCDE12345, OTHER12345", "hostile suite: X-Team-ID sent twice reads as malformed")
        #expect(params["HTTP_ACCEPT"] == "a", "a name sent once is unchanged")
    }

    @Test("no environment, no params")
    func none() {
        #expect(FCGXConnection.params(fromEnvironment: nil).isEmpty)
    }

    @Test("body plan follows CONTENT_LENGTH and the limit", arguments: [
        ("0", BodyPlan.empty), ("10", .exactly(10)), ("100", .exactly(100)), ("101", .tooLarge),
        ("", .untilEnd(limit: 100)), ("abc", .untilEnd(limit: 100)), ("-5", .untilEnd(limit: 100)),
    ])
    func bodyPlan(contentLength: String, plan: BodyPlan) {
        #expect(BodyPlan(contentLength: contentLength, limit: 100) == plan)
    }

    @Test("no CONTENT_LENGTH reads to the end, bounded by the limit")
    func bodyPlanAbsent() {
        #expect(BodyPlan(contentLength: nil, limit: 7) == .untilEnd(limit: 7))
        #expect(BodyPlan(contentLength: "1", limit: 0) == .tooLarge)
    }
}
