import AttestCore

/// RFC 8949 §8 diagnostic notation for the values `CBORReader` produces, to compare decoded
/// values with the vectors' `diag` text.
enum CBORDiagnostic {
    static func text(_ value: CBORValue) -> String {
        switch value {
        case .unsigned(let n): return String(n)
        case .negative(let n): return n == .max ? "-18446744073709551616" : "-\(n + 1)"
        case .bytes(let b): return "h'\(Hex.encode(b))'"
        case .text(let t):
            return "\"" + t.replacingOccurrences("\\", "\\\\").replacingOccurrences("\"", "\\\"") + "\""
        case .array(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        case .map(let entries):
            return "{" + entries.map { "\(text($0.key)): \(text($0.value))" }.joined(separator: ", ") + "}"
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .undefined: return "undefined"
        }
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: Character, _ replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
