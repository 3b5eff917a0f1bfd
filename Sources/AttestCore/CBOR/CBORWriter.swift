/// Encodes `CBORValue`s in the preferred (shortest) form, maps in the given entry order.
///
/// Used by the software device and the test PKI to build attestation objects and assertions.
public enum CBORWriter {
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var out = [UInt8]()
        append(value, to: &out)
        return out
    }

    public static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let n): head(0, n, &out)
        case .negative(let n): head(1, n, &out)
        case .bytes(let b): head(2, UInt64(b.count), &out); out.append(contentsOf: b)
        case .text(let t): head(3, UInt64(t.utf8.count), &out); out.append(contentsOf: t.utf8)
        case .array(let items):
            head(4, UInt64(items.count), &out)
            for item in items { append(item, to: &out) }
        case .map(let entries):
            head(5, UInt64(entries.count), &out)
            for entry in entries {
                append(entry.key, to: &out)
                append(entry.value, to: &out)
            }
        case .bool(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        }
    }

    /// A signed integer as `.unsigned` or `.negative`.
    public static func int(_ v: Int64) -> CBORValue {
        v >= 0 ? .unsigned(UInt64(v)) : .negative(UInt64(-1 - v))
    }

    private static func head(_ major: UInt8, _ n: UInt64, _ out: inout [UInt8]) {
        let m = major << 5
        switch n {
        case 0..<24: out.append(m | UInt8(n))
        case 24...0xFF: out.append(m | 24); out.append(UInt8(n))
        case 0x100...0xFFFF: out.append(m | 25); bigEndian(n, 2, &out)
        case 0x1_0000...0xFFFF_FFFF: out.append(m | 26); bigEndian(n, 4, &out)
        default: out.append(m | 27); bigEndian(n, 8, &out)
        }
    }

    private static func bigEndian(_ n: UInt64, _ width: Int, _ out: inout [UInt8]) {
        for i in stride(from: width - 1, through: 0, by: -1) {
            out.append(UInt8(truncatingIfNeeded: n >> (UInt64(i) * 8)))
        }
    }
}
