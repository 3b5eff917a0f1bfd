/// The text of one log line, built by string interpolation: every interpolated value is
/// escaped, so a value taken from a request (a header, a CBOR `fmt`, a parser's reason) can
/// neither end the line and forge another nor break out of the `key="value"` quotes around it.
///
/// ```
/// ctx.log("validate requestId=\(id) detail=\"\(reason)\"")   // reason: a\n"b  →  detail="a\n\"b"
/// ```
/// Escapes (`LogMessage.escape`): `\` → `\\`, `"` → `\"`, LF → `\n`, CR → `\r`, TAB → `\t`,
/// other C0 controls, DEL, C1 controls and U+2028/U+2029 → `\uXXXX` (hex, upper case).
/// Literal segments are the program's own text: only their control characters are escaped.
/// Every logger takes a `LogMessage` (FastCGI's pool log, `ServiceContext.log`), so there is no
/// way to log a raw `String`.
public struct LogMessage: ExpressibleByStringInterpolation, CustomStringConvertible, Sendable, Equatable {
    /// The escaped line, without a trailing newline; never contains a control character.
    public private(set) var text: String

    public init(stringLiteral value: String) { text = Self.escape(value, quotes: false) }

    public init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    public var description: String { text }

    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }
        public mutating func appendLiteral(_ literal: String) { text += LogMessage.escape(literal, quotes: false) }
        public mutating func appendInterpolation(_ value: some Any) {
            text += LogMessage.escape(String(describing: value), quotes: true)
        }
    }

    /// `value` with control characters escaped, and `"` and `\` too when `quotes` (values).
    public static func escape(_ value: String, quotes: Bool) -> String {
        if !value.unicodeScalars.contains(where: { needsEscape($0, quotes: quotes) }) { return value }
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            guard needsEscape(scalar, quotes: quotes) else { out.append(scalar); continue }
            switch scalar {
            case "\\": out.append(contentsOf: #"\\"#.unicodeScalars)
            case "\"": out.append(contentsOf: #"\""#.unicodeScalars)
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": out.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": out.append(contentsOf: #"\t"#.unicodeScalars)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex)
                    .unicodeScalars)
            }
        }
        return String(out)
    }

    static func needsEscape(_ s: Unicode.Scalar, quotes: Bool) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: return true
        case 0x22, 0x5C: return quotes
        default: return false
        }
    }
}
