/// A COSE_Key (RFC 9053) of type EC2 on P-256, as App Attest puts in authenticator data.
///
/// ```
/// { 1 (kty): 2 (EC2), 3 (alg): -7 (ES256), -1 (crv): 1 (P-256), -2 (x): bstr .size 32, -3 (y): bstr .size 32 }
/// ```
public struct COSEKey: Sendable, Hashable {
    public let x: ArraySlice<UInt8>
    public let y: ArraySlice<UInt8>

    public init(_ value: CBORValue) throws(AttestError) {
        guard value.mapEntries != nil else { throw AttestError(.publicKeyInvalid, "COSE key is not a map") }
        guard value[int: 1]?.intValue == 2 else { throw AttestError(.publicKeyInvalid, "COSE kty is not EC2") }
        if let alg = value[int: 3], alg.intValue != -7 { throw AttestError(.publicKeyInvalid, "COSE alg is not ES256") }
        guard value[int: -1]?.intValue == 1 else { throw AttestError(.publicKeyInvalid, "COSE curve is not P-256") }
        guard let x = value[int: -2]?.bytesValue, x.count == 32,
              let y = value[int: -3]?.bytesValue, y.count == 32 else {
            throw AttestError(.publicKeyInvalid, "COSE x/y are not 32-byte strings")
        }
        self.x = x
        self.y = y
    }

    /// The key as an uncompressed X9.62 point: `0x04 ‖ x ‖ y`.
    public var x962Point: [UInt8] { [0x04] + x + y }

    /// The CBOR encoding of an EC2 P-256 key for the given point (used by the software device).
    public static func encode(x962Point p: [UInt8]) -> CBORValue {
        precondition(p.count == 65 && p[0] == 0x04)
        return .map([
            CBORMapEntry(key: .unsigned(1), value: .unsigned(2)),
            CBORMapEntry(key: .unsigned(3), value: .negative(6)),
            CBORMapEntry(key: .negative(0), value: .unsigned(1)),
            CBORMapEntry(key: .negative(1), value: .bytes(p[1..<33])),
            CBORMapEntry(key: .negative(2), value: .bytes(p[33..<65])),
        ])
    }
}
