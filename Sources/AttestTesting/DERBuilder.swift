import AttestCore

/// Encodes the DER (X.690) values the test PKI needs to write certificates.
///
/// Every value is a complete TLV: identifier octet, definite minimal length, content.
/// ```
/// length < 128:   one octet
/// length ≥ 128:   0x80 | n, then n big-endian octets (n minimal)
/// ```
public enum DERBuilder {
    /// A TLV with identifier `tag` around `content`.
    public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    /// The definite, minimal length octets for `n`.
    public static func length(_ n: Int) -> [UInt8] {
        guard n >= 0x80 else { return [UInt8(n)] }
        var octets = [UInt8]()
        var rest = n
        while rest > 0 { octets.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 }
        return [0x80 | UInt8(octets.count)] + octets
    }

    public static func sequence(_ items: [[UInt8]]) -> [UInt8] { tlv(0x30, items.flatMap { $0 }) }
    public static func set(_ items: [[UInt8]]) -> [UInt8] { tlv(0x31, items.flatMap { $0 }) }
    public static func boolean(_ value: Bool) -> [UInt8] { [0x01, 0x01, value ? 0xFF : 0x00] }
    public static func octetString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x04, bytes) }
    public static func utf8String(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    public static func oid(_ oid: ObjectIdentifier) -> [UInt8] { tlv(0x06, oid.contentOctets) }

    /// A BIT STRING with no unused bits.
    public static func bitString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x03, [0] + bytes) }

    /// `[number] EXPLICIT` (constructed, context-specific) around `content`.
    public static func explicit(_ number: UInt8, _ content: [UInt8]) -> [UInt8] { tlv(0xA0 | number, content) }

    /// A non-negative INTEGER from big-endian magnitude bytes (leading zeros dropped, a zero
    /// octet added when the high bit is set so the value stays positive).
    public static func integer(magnitude bytes: [UInt8]) -> [UInt8] {
        var digits = Array(bytes.drop { $0 == 0 })
        if digits.isEmpty { digits = [0] }
        if digits[0] & 0x80 != 0 { digits.insert(0, at: 0) }
        return tlv(0x02, digits)
    }

    public static func integer(_ value: UInt64) -> [UInt8] {
        integer(magnitude: (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) })
    }

    /// RFC 5280 §4.1.2.5: UTCTime `YYMMDDHHMMSSZ` for 1950–2049, GeneralizedTime
    /// `YYYYMMDDHHMMSSZ` otherwise.
    public static func time(_ t: Timestamp) -> [UInt8] {
        let c = t.civil
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let rest = two(c.month) + two(c.day) + two(c.hour) + two(c.minute) + two(c.second) + "Z"
        if (1950...2049).contains(c.year) {
            return tlv(0x17, Array((two(c.year % 100) + rest).utf8))
        }
        let y = String(c.year)
        return tlv(0x18, Array((String(repeating: "0", count: max(0, 4 - y.count)) + y + rest).utf8))
    }
}
