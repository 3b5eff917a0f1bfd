/// Conversion between DER and fixed-width ECDSA signatures.
///
/// ```
/// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }      ; X.509, App Attest
/// JWS (RFC 7518 §3.4): r ‖ s, each left-padded to the curve size (32 bytes for P-256)
/// ```
public enum ECDSASignature {
    /// DER to `r ‖ s` with each half `width` bytes.
    public static func raw<C: Collection>(fromDER der: C, width: Int = 32) throws(AttestError) -> [UInt8]
    where C.Element == UInt8 {
        let node = try DER.parse(ArraySlice(der))
        let parts = try node.children()
        guard node.isUniversal(DER.Node.sequence), parts.count == 2,
              parts.allSatisfy({ $0.isUniversal(DER.Node.integer) }) else {
            throw AttestError(.derMalformed, "not an ECDSA-Sig-Value")
        }
        var out = [UInt8]()
        for part in parts {
            let digits = part.content.drop { $0 == 0 }
            guard digits.count <= width else { throw AttestError(.derMalformed, "integer wider than \(width) bytes") }
            out += [UInt8](repeating: 0, count: width - digits.count) + digits
        }
        return out
    }

    /// `r ‖ s` to DER.
    public static func der(fromRaw raw: [UInt8]) throws(AttestError) -> [UInt8] {
        guard raw.count % 2 == 0, !raw.isEmpty else { throw AttestError(.derMalformed, "odd raw signature length") }
        func integer(_ half: ArraySlice<UInt8>) -> [UInt8] {
            var digits = Array(half.drop { $0 == 0 })
            if digits.isEmpty { digits = [0] }
            if digits[0] & 0x80 != 0 { digits.insert(0, at: 0) }
            return [0x02] + derLength(digits.count) + digits
        }
        let body = integer(raw[..<(raw.count / 2)]) + integer(raw[(raw.count / 2)...])
        return [0x30] + derLength(body.count) + body
    }

    static func derLength(_ n: Int) -> [UInt8] {
        n < 0x80 ? [UInt8(n)] : n < 0x100 ? [0x81, UInt8(n)] : [0x82, UInt8(n >> 8), UInt8(n & 0xFF)]
    }
}
