import AttestCore

/// DER `Extension`s the test PKI puts in certificates.
///
/// ```
/// Extension ::= SEQUENCE { extnID OBJECT IDENTIFIER, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }
/// BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }
/// KeyUsage ::= BIT STRING
/// App Attest nonce (1.2.840.113635.100.8.2) ::= SEQUENCE { [1] EXPLICIT OCTET STRING }
/// ```
public enum X509Extension {
    /// An extension with `value` (the extnValue's content) as given.
    public static func der(_ oid: ObjectIdentifier, critical: Bool = false, value: [UInt8]) -> [UInt8] {
        var parts = [DERBuilder.oid(oid)]
        if critical { parts.append(DERBuilder.boolean(true)) }
        parts.append(DERBuilder.octetString(value))
        return DERBuilder.sequence(parts)
    }

    /// An extension whose critical BOOLEAN is the single octet `criticalOctet` (DER allows only
    /// 0xFF, and no BOOLEAN at all for FALSE; other octets test lenient readers).
    public static func der(_ oid: ObjectIdentifier, criticalOctet: UInt8, value: [UInt8]) -> [UInt8] {
        DERBuilder.sequence([DERBuilder.oid(oid), DERBuilder.tlv(0x01, [criticalOctet]), DERBuilder.octetString(value)])
    }

    /// Critical basicConstraints: `CA:TRUE[, pathlen]` or, for `ca == false`, the empty sequence.
    public static func basicConstraints(ca: Bool, pathLength: UInt64? = nil) -> [UInt8] {
        var parts = [[UInt8]]()
        if ca { parts.append(DERBuilder.boolean(true)) }
        if let pathLength { parts.append(DERBuilder.integer(pathLength)) }
        return der(.basicConstraints, critical: true, value: DERBuilder.sequence(parts))
    }

    /// Critical keyUsage; `bits` is the first (and only) octet, bit 0 the high bit.
    public static func keyUsage(_ bits: UInt8) -> [UInt8] {
        let unused = bits == 0 ? 0 : UInt8(bits.trailingZeroBitCount)
        return der(.keyUsage, critical: true, value: DERBuilder.tlv(0x03, [unused, bits]))
    }

    /// keyCertSign | cRLSign, a CA's usage.
    public static let certificateSigning: UInt8 = 0x06
    /// digitalSignature | nonRepudiation | keyEncipherment | dataEncipherment, Apple's leaf usage.
    public static let credentialUsage: UInt8 = 0xF0

    public static func subjectKeyIdentifier(_ id: [UInt8]) -> [UInt8] {
        der(.subjectKeyIdentifier, value: DERBuilder.octetString(id))
    }

    /// `SEQUENCE { [0] IMPLICIT keyIdentifier }`.
    public static func authorityKeyIdentifier(_ id: [UInt8]) -> [UInt8] {
        der(.authorityKeyIdentifier, value: DERBuilder.sequence([DERBuilder.tlv(0x80, id)]))
    }

    /// The App Attest nonce extension carrying `nonce`.
    public static func appAttestNonce(_ nonce: [UInt8]) -> [UInt8] {
        der(.appAttestNonce, value: DERBuilder.sequence([DERBuilder.explicit(1, DERBuilder.octetString(nonce))]))
    }

    /// A key identifier: the first 20 bytes of SHA-256 of the whole SubjectPublicKeyInfo (any
    /// stable method will do, RFC 5280 §4.2.1.2).
    public static func keyIdentifier(subjectPublicKeyInfo spki: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(spki).prefix(20))
    }
}
