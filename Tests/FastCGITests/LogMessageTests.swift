import FastCGI
import Testing

/// `LogMessage`, the one escaping every logger goes through: interpolated values cannot break
/// a line or its quotes; the program's own literals keep their quotes.
@Suite struct LogMessageTests {
    @Test func interpolatedControlCharactersQuotesAndBackslashesAreEscaped() {
        let value = "a\nb\rc\td\u{0}e\u{1B}[31mf\u{7F}g\u{85}h\u{2028}i\"j\\k"
        let message: LogMessage = "detail=\"\(value)\""
        #expect(message.text == #"detail="a\nb\rc\td\u0000e\u001B[31mf\u007Fg\u0085h\u2028i\"j\\k""#)
    }

    @Test func noControlCharacterSurvivesInAnyPosition() {
        for scalar in (0...0x9F).compactMap(Unicode.Scalar.init) + ["\u{2028}", "\u{2029}"] {
            let hostile = "x\(Character(scalar))y"
            let message: LogMessage = "k=\(hostile) literal\(Character(scalar))end"
            #expect(!message.text.unicodeScalars.contains {
                        $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}"
                    },
                    "U+\(String(scalar.value, radix: 16)) is escaped in values and literals: \(message.text)")
        }
    }

    @Test func plainValuesAndLiteralQuotesAreKeptAsTheyAre() {
        let message: LogMessage = "validate requestId=\("0123abcd") status=\(401) detail=\"\("step format: fmt is x")\""
        #expect(message.text == #"validate requestId=0123abcd status=401 detail="step format: fmt is x""#)
    }
}
