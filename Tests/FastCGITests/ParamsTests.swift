@testable import FastCGI
import Testing

@Suite("FastCGI params and body plan") struct ParamsTests {
    private func params(_ pairs: [([UInt8], [UInt8])]) throws -> Params {
        var bytes = [UInt8]()
        for (name, value) in pairs { NameValuePairs.append(name: name, value: value, to: &bytes) }
        return try NameValuePairs.params(bytes[...])
    }

    @Test("name-value pairs become params; names and values are taken whole, = included")
    func pairs() throws {
        let decoded = try params([(Array("REQUEST_METHOD".utf8), Array("POST".utf8)),
                                  (Array("QUERY_STRING".utf8), Array("a=1&b=2".utf8)),
                                  (Array("HTTP_X_EMPTY".utf8), []), (Array("A=B".utf8), Array("c".utf8))])
        #expect(decoded == ["REQUEST_METHOD": "POST", "QUERY_STRING": "a=1&b=2", "HTTP_X_EMPTY": "", "A=B": "c"])
    }

    @Test("invalid UTF-8 in a value is repaired, not dropped")
    func invalidUTF8() throws {
        #expect(try params([(Array("HTTP_X".utf8), [0xFF, 0x41])])["HTTP_X"] == "\u{FFFD}A")
    }

    @Test("a repeated name is combined as RFC 9110 says, never one value silently dropped")
    func repeatedNames() throws {
        let decoded = try params([(Array("HTTP_X_TEAM_ID".utf8), Array("ABCDE12345".utf8)),
                                  (Array("HTTP_X_TEAM_ID".utf8), Array("OTHER12345".utf8)),
                                  (Array("HTTP_ACCEPT".utf8), Array("a".utf8))])
        #expect(decoded["HTTP_X_TEAM_ID"] == "ABCDE12345, OTHER12345",
                "hostile suite: X-Team-ID sent twice reads as malformed")
        #expect(decoded["HTTP_ACCEPT"] == "a", "a name sent once is unchanged")
    }

    @Test("a name is matched whole: not by a prefix, not by a longer name")
    func wholeNames() throws {
        let decoded = try params([(Array("HTTP_X_TEAM_ID".utf8), Array("T".utf8)),
                                  (Array("HTTP_X".utf8), Array("x".utf8))])
        #expect(decoded["HTTP_X"] == "x")
        #expect(decoded["HTTP_X_TEAM"] == nil)
        #expect(decoded["HTTP_X_TEAM_ID_2"] == nil)
        #expect(decoded["http_x"] == nil, "params are case-sensitive (Request.header upper-cases)")
    }

    @Test("repeats combine as the dictionary did: an empty first value gives way, an empty later one is kept")
    func repeatedEmpty() throws {
        let name = Array("HTTP_A".utf8)
        #expect(try params([(name, []), (name, Array("x".utf8))])["HTTP_A"] == "x")
        #expect(try params([(name, Array("x".utf8)), (name, [])])["HTTP_A"] == "x, ")
        #expect(try params([(name, Array("x".utf8)), (name, Array("y".utf8)), (name, Array("z".utf8))]).dictionary
                    == ["HTTP_A": "x, y, z"])
    }

    @Test("a stream whose lengths run past its end is refused when the params are made, not when read")
    func truncated() {
        var bytes = [UInt8]()
        NameValuePairs.append(name: Array("HTTP_X".utf8), value: Array("value".utf8), to: &bytes)
        #expect(throws: FastCGIError.self) { try NameValuePairs.params(bytes.dropLast()) }
    }

    @Test("params compare by content, whatever the order they came in")
    func equality() throws {
        let a = try params([(Array("A".utf8), Array("1".utf8)), (Array("B".utf8), Array("2".utf8))])
        let b = try params([(Array("B".utf8), Array("2".utf8)), (Array("A".utf8), Array("1".utf8))])
        #expect(a == b)
        #expect(a == Params(["A": "1", "B": "2"]))
        #expect(a != Params(["A": "1"]))
    }

    @Test("no pairs, no params")
    func none() throws {
        #expect(try NameValuePairs.params([][...]).isEmpty)
    }

    @Test("lengths use the 1-byte form below 128 and the 4-byte form from 128",
          arguments: [0, 1, 127, 128, 300, 70_000])
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
