/// An ASN.1 OBJECT IDENTIFIER kept as its DER content octets, so comparison is a byte compare.
public struct ObjectIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let contentOctets: [UInt8]

    /// Encodes a dotted OID such as `1.2.840.113635.100.8.2`; traps on malformed literals,
    /// which are programmer errors.
    public init(_ dotted: String) {
        let arcs = dotted.split(separator: ".").map { UInt64($0)! }
        precondition(arcs.count >= 2 && arcs[0] <= 2, "malformed OID \(dotted)")
        var out = [UInt8]()
        func base128(_ v: UInt64) {
            var groups = [UInt8(v & 0x7F)]
            var rest = v >> 7
            while rest > 0 { groups.append(UInt8(rest & 0x7F) | 0x80); rest >>= 7 }
            out.append(contentsOf: groups.reversed())
        }
        base128(arcs[0] * 40 + arcs[1])
        for arc in arcs.dropFirst(2) { base128(arc) }
        contentOctets = out
    }

    public init(contentOctets: [UInt8]) { self.contentOctets = contentOctets }

    public var description: String {
        var arcs = [UInt64]()
        var v: UInt64 = 0
        for b in contentOctets {
            v = v << 7 | UInt64(b & 0x7F)
            if b & 0x80 == 0 {
                if arcs.isEmpty { arcs += v < 80 ? [v / 40, v % 40] : [2, v - 80] } else { arcs.append(v) }
                v = 0
            }
        }
        return arcs.map(String.init).joined(separator: ".")
    }

    /// Apple's App Attest nonce extension on the credential certificate.
    public static let appAttestNonce = ObjectIdentifier("1.2.840.113635.100.8.2")
    public static let ecPublicKey = ObjectIdentifier("1.2.840.10045.2.1")
    public static let prime256v1 = ObjectIdentifier("1.2.840.10045.3.1.7")
    public static let basicConstraints = ObjectIdentifier("2.5.29.19")
    public static let keyUsage = ObjectIdentifier("2.5.29.15")
    public static let extendedKeyUsage = ObjectIdentifier("2.5.29.37")
    public static let subjectKeyIdentifier = ObjectIdentifier("2.5.29.14")
    public static let authorityKeyIdentifier = ObjectIdentifier("2.5.29.35")
}
