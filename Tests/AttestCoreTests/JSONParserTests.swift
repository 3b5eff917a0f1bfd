import AttestCore
import Testing

/// JSON strings (RFC 8259 §7): plain ASCII, UTF-8 beyond it, escapes; invalid UTF-8 refused.
@Suite struct JSONParserTests {
    static func string(_ bytes: [UInt8]) throws -> String? {
        try JSONParser.parse([UInt8(ascii: "[")] + [UInt8(ascii: "\"")] + bytes
                             + [UInt8(ascii: "\""), UInt8(ascii: "]")])
            .arrayValue?.first?.stringValue
    }

    @Test("strings read as written",
          arguments: ["", "a", "device-7f3a", "Zoë", "日本語", "🙂 ok", "tab\u{7F}del"])
    func plain(text: String) throws {
        #expect(try Self.string(Array(text.utf8)) == text)
    }

    @Test func escapesAreDecoded() throws {
        #expect(try Self.string(Array(#"a\"b\\c\/d\n\t\u00e9\ud83d\ude42"#.utf8)) == "a\"b\\c/d\n\té🙂")
        #expect(try Self.string(Array(#"é\n"#.utf8)) == "é\n", "UTF-8 before an escape")
    }

    @Test("bytes that are not UTF-8 are refused", arguments: [
        [0xFF], [0xC3], [0x61, 0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0x80],
        [0xC3, 0x5C, 0x6E],  // a cut sequence, then an escape
    ] as [[UInt8]])
    func invalidUTF8(bytes: [UInt8]) {
        #expect(throws: AttestError.self) { try Self.string(bytes) }
    }

    @Test func controlCharactersMustBeEscaped() {
        #expect(throws: AttestError.self) { try Self.string([0x61, 0x0A, 0x62]) }
        #expect(throws: AttestError.self) { try Self.string([0x1F]) }
    }

    @Test func writtenTextParsesBack() throws {
        let value: JSONValue = ["id": "Zoë", "n": .int(-3), "list": .array(["a\"b", .null, .bool(true)]),
                                "nested": ["k": "\u{1}"]]
        #expect(try JSONParser.parse(value.jsonBytes) == value)
    }
}
