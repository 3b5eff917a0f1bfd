/// Parses JSON text (RFC 8259) into a `JSONValue`, with named limits.
///
/// Strict: one value with optional surrounding white space, no trailing commas, no comments,
/// strings must be valid UTF-8 and escapes well-formed (surrogate pairs combined).
public struct JSONParser {
    public struct Limits: Sendable {
        public var maxDepth = 32
        public var maxBytes = 1 << 20
        public init() {}
    }

    private let bytes: [UInt8]
    private var i = 0
    private let limits: Limits

    /// Parses `text`; throws `.jsonMalformed` with the byte offset of the problem.
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(AttestError) -> JSONValue {
        guard bytes.count <= limits.maxBytes else {
            throw AttestError(.jsonMalformed, "JSON text over \(limits.maxBytes) bytes")
        }
        var parser = JSONParser(bytes: bytes, limits: limits)
        parser.skipSpace()
        let value = try parser.parseValue(depth: 0)
        parser.skipSpace()
        guard parser.i == bytes.count else { throw parser.fail("unexpected text after the value") }
        return value
    }

    public static func parse(_ text: String, limits: Limits = Limits()) throws(AttestError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }

    private init(bytes: [UInt8], limits: Limits) {
        self.bytes = bytes
        self.limits = limits
    }

    private func fail(_ what: String) -> AttestError { AttestError(.jsonMalformed, "\(what) at byte \(i)") }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func expect(_ word: String, _ value: JSONValue) throws(AttestError) -> JSONValue {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else { throw fail("invalid literal") }
        i += w.count
        return value
    }

    private mutating func parseValue(depth: Int) throws(AttestError) -> JSONValue {
        guard depth < limits.maxDepth else { throw fail("nesting deeper than \(limits.maxDepth)") }
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            var members = [(String, JSONValue)]()
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let key = try parseString()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipSpace()
                members.append((key, try parseValue(depth: depth + 1)))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated object") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            i += 1
            var items = [JSONValue]()
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try parseValue(depth: depth + 1))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated array") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        default:
            return try parseNumber()
        }
    }

    private mutating func parseNumber() throws(AttestError) -> JSONValue {
        let start = i
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.i
            while p.i < p.bytes.count, p.bytes[p.i] >= 0x30, p.bytes[p.i] <= 0x39 { p.i += 1 }
            return p.i - s
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        let intStart = i
        let n = digits(&self)
        guard n > 0 else { throw fail("invalid value") }
        guard !(n > 1 && bytes[intStart] == 0x30) else { throw fail("leading zero") }
        var isInteger = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            isInteger = false
            guard digits(&self) > 0 else { throw fail("digits expected after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            isInteger = false
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { throw fail("digits expected in exponent") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
        return .double(value)
    }

    private mutating func hex4() throws(AttestError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func parseString() throws(AttestError) -> String {
        i += 1  // opening quote
        let start = i
        // Fast path: no escapes.
        var ascii = true
        while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\"), bytes[i] >= 0x20 {
            if bytes[i] >= 0x80 { ascii = false }
            i += 1
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "\"") {
            // ASCII is valid UTF-8 as it stands: made without `String(validating:)`, whose generic
            // path cost ~3k instructions a string (a token's claims are some 25 strings).
            let s: String
            if ascii {
                s = bytes.withUnsafeBufferPointer {
                    String(decoding: UnsafeBufferPointer(rebasing: $0[start..<i]), as: UTF8.self)
                }
            } else {
                guard let valid = String(validating: bytes[start..<i], as: UTF8.self) else {
                    throw fail("string is not UTF-8")
                }
                s = valid
            }
            i += 1
            return s
        }
        var out = Array(bytes[start..<i])
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            i += 1
            switch c {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("string is not UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                guard i < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard i + 2 <= bytes.count, bytes[i] == UInt8(ascii: "\\"),
                              bytes[i + 1] == UInt8(ascii: "u") else {
                            throw fail("lone surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("invalid surrogate pair") }
                        scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("invalid code point") }
                    out += Array(String(Character(u)).utf8)
                default: throw fail("invalid escape")
                }
            case 0..<0x20:
                throw fail("control character in string")
            default:
                out.append(c)
            }
        }
    }
}
