/// Serialises `JSONValue`s compactly (no insignificant white space), or indented for people.
extension JSONValue {
    /// Compact JSON text.
    public var jsonText: String {
        String(decoding: jsonBytes, as: UTF8.self)
    }

    /// JSON text indented by two spaces, keys in their stored order.
    public var prettyJSONText: String {
        var out = [UInt8]()
        write(to: &out, indent: 2, level: 0)
        return String(decoding: out, as: UTF8.self)
    }

    public var jsonBytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(512)
        write(to: &out, indent: nil, level: 0)
        return out
    }

    func write(to out: inout [UInt8], indent: Int?, level: Int) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite {
                out += Array((d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)).utf8)
            } else {
                out += Array("null".utf8)
            }
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(&out, indent, level + 1)
                item.write(to: &out, indent: indent, level: level + 1)
            }
            if !items.isEmpty { newline(&out, indent, level) }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(&out, indent, level + 1)
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                if indent != nil { out.append(UInt8(ascii: " ")) }
                value.write(to: &out, indent: indent, level: level + 1)
            }
            if !members.isEmpty { newline(&out, indent, level) }
            out.append(UInt8(ascii: "}"))
        }
    }

    private func newline(_ out: inout [UInt8], _ indent: Int?, _ level: Int) {
        guard let indent else { return }
        out.append(UInt8(ascii: "\n"))
        out += [UInt8](repeating: UInt8(ascii: " "), count: indent * level)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A JSON string literal: quotes, backslash and control characters escaped.
    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escaping: checked and copied whole from their UTF-8 buffer
        // (a token's claims are some 70 strings).
        var text = s
        let plain = text.withUTF8 { bytes -> Bool in
            for b in bytes where b < 0x20 || b == 0x22 || b == 0x5C { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain {
            out.append(UInt8(ascii: "\""))
            return
        }
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [0x5C, 0x22]
            case UInt8(ascii: "\\"): out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20: out += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
