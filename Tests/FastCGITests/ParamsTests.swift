@testable import FastCGI
import Testing

@Suite("FastCGI params and body plan") struct ParamsTests {
    private func params(_ pairs: [([UInt8], [UInt8])]) throws -> [String: String] {
        var bytes = [UInt8]()
        for (name, value) in pairs { NameValuePairs.append(name: name, value: value, to: &bytes) }
        return try NameValuePairs.params(bytes[...])
    }

    @Test("name-value pairs become params; names and values are taken whole, = included")
    func pairs() throws {
        let decoded = try params([(Array("REQUEST_METHOD".utf8), Array("POST".utf8)), (Array("QUERY_STRING".utf8), Array("a=1&b=2".utf8)),
                                  (Array("HTTP_X_EMPTY".utf8), []), (Array("A=B".utf8), Array("c".utf8))])
        #expect(decoded == ["REQUEST_METHOD": "POST", "QUERY_STRING": "a=1&b=2", "HTTP_X_EMPTY": "", "A=B": "c"])
    }

    @Test("invalid UTF-8 in a value is repaired, not dropped")
    func invalidUTF8() throws {
        #expect(try params([(Array("HTTP_X".utf8), [0xFF, 0x41])])["HTTP_X"] == "\u{FFFD}A")
    }

    @Test("a repeated name is combined as RFC 9110 says, never one value silently dropped")
    func repeatedNames() throws {
        let decoded = try params([(Array("HTTP_X_TEAM_ID".utf8), Array("ABCDE12345".utf8)), (Array("HTTP_X_TEAM_ID".utf8), Array("OTHER12345".utf8)),
                                  (Array("HTTP_ACCEPT".utf8), Array("a".utf8))])
        #expect(decoded["HTTP_X_TEAM_ID"] == "ABCDE12345, OTHER12345", "hostile suite: X-Team-ID sent twice reads as malformed")
        #expect(decoded["HTTP_ACCEPT"] == "a", "a name sent once is unchanged")
    }

    @Test("no pairs, no params")
    func none() throws {
        #expect(try NameValuePairs.params([][...]).isEmpty)
    }

    @Test("lengths use the 1-byte form below 128 and the 4-byte form from 128", arguments: [0, 1, 127, 128, 300, 70_000])
    func lengthForms(length: Int) throws {
        var bytes = [UInt8]()
        NameValuePairs.append(name: [UInt8](repeating: 0x4E, count: length), value: [0x76], to: &bytes)
        #expect(bytes.count == length + 1 + (length < 128 ? 1 : 4) + 1)
        var seen: [(Int, Int)] = []
        try NameValuePairs.decode(bytes[...]) { seen.append(($0.count, $1.count)) }
        #expect(seen.count == 1 && seen[0] == (length, 1))
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
