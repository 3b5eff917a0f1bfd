/// Reads the fields App Attest needs straight from a certificate's DER, without OpenSSL.
///
/// ```
/// Certificate ::= SEQUENCE { tbsCertificate TBSCertificate, signatureAlgorithm, signature }
/// TBSCertificate ::= SEQUENCE {
///     version [0] EXPLICIT INTEGER OPTIONAL, serialNumber INTEGER, signature AlgorithmIdentifier,
///     issuer Name, validity Validity, subject Name, subjectPublicKeyInfo SubjectPublicKeyInfo,
///     issuerUniqueID [1] IMPLICIT OPTIONAL, subjectUniqueID [2] IMPLICIT OPTIONAL,
///     extensions [3] EXPLICIT SEQUENCE OF Extension OPTIONAL }
/// Extension ::= SEQUENCE { extnID OBJECT IDENTIFIER, critical BOOLEAN DEFAULT FALSE,
///                          extnValue OCTET STRING }
/// SubjectPublicKeyInfo ::= SEQUENCE { algorithm AlgorithmIdentifier, subjectPublicKey BIT STRING }
/// ```
public struct CertificateFields: Sendable {
    /// The SubjectPublicKeyInfo, whole.
    public let subjectPublicKeyInfo: ArraySlice<UInt8>
    /// The BIT STRING's key bytes (unused-bits octet removed); for EC keys the X9.62 point.
    public let subjectPublicKey: ArraySlice<UInt8>
    /// The algorithm and parameters OIDs of the key (parameters absent for non-EC keys).
    public let keyAlgorithm: ObjectIdentifier
    public let keyParameters: ObjectIdentifier?
    /// Extension id → extnValue content octets.
    public let extensions: [ObjectIdentifier: ArraySlice<UInt8>]

    public init(derEncoded der: ArraySlice<UInt8>) throws(AttestError) {
        let cert = try DER.parse(der)
        let top = try cert.children()
        guard cert.isUniversal(DER.Node.sequence), top.count == 3, top[0].isUniversal(DER.Node.sequence) else {
            throw AttestError(.derMalformed, "not a certificate")
        }
        var tbs = try top[0].children()[...]
        if let first = tbs.first, first.isContext(0) { tbs = tbs.dropFirst() }
        guard tbs.count >= 6 else { throw AttestError(.derMalformed, "TBSCertificate has \(tbs.count) fields") }
        let spki = tbs[tbs.startIndex + 5]
        let spkiParts = try spki.children()
        guard spki.isUniversal(DER.Node.sequence), spkiParts.count == 2,
              spkiParts[0].isUniversal(DER.Node.sequence), spkiParts[1].isUniversal(DER.Node.bitString),
              spkiParts[1].content.first == 0 else {
            throw AttestError(.derMalformed, "malformed SubjectPublicKeyInfo")
        }
        let alg = try spkiParts[0].children()
        guard let algOID = alg.first, algOID.isUniversal(DER.Node.objectIdentifier) else {
            throw AttestError(.derMalformed, "malformed key algorithm")
        }
        subjectPublicKeyInfo = spki.encoded
        subjectPublicKey = spkiParts[1].content.dropFirst()
        keyAlgorithm = ObjectIdentifier(contentOctets: Array(algOID.content))
        keyParameters = alg.count > 1 && alg[1].isUniversal(DER.Node.objectIdentifier)
            ? ObjectIdentifier(contentOctets: Array(alg[1].content)) : nil

        var found = [ObjectIdentifier: ArraySlice<UInt8>]()
        if let wrapper = tbs.dropFirst(6).first(where: { $0.isContext(3) }) {
            let list = try wrapper.children()
            guard list.count == 1, list[0].isUniversal(DER.Node.sequence) else {
                throw AttestError(.derMalformed, "malformed extensions")
            }
            for ext in try list[0].children() {
                let parts = try ext.children()
                guard ext.isUniversal(DER.Node.sequence), parts.count == 2 || parts.count == 3,
                      parts[0].isUniversal(DER.Node.objectIdentifier),
                      parts[parts.count - 1].isUniversal(DER.Node.octetString),
                      parts.count == 2 || parts[1].isUniversal(DER.Node.boolean) else {
                    throw AttestError(.derMalformed, "malformed extension")
                }
                let oid = ObjectIdentifier(contentOctets: Array(parts[0].content))
                guard found[oid] == nil else { throw AttestError(.derMalformed, "duplicate extension \(oid)") }
                found[oid] = parts[parts.count - 1].content
            }
        }
        extensions = found
    }

    /// The uncompressed P-256 point of an EC P-256 key, or `nil` for any other key.
    public var p256Point: ArraySlice<UInt8>? {
        guard keyAlgorithm == .ecPublicKey, keyParameters == .prime256v1,
              subjectPublicKey.count == 65, subjectPublicKey.first == 0x04 else { return nil }
        return subjectPublicKey
    }

    /// The App Attest nonce: extension 1.2.840.113635.100.8.2, `SEQUENCE { [1] EXPLICIT OCTET STRING }`.
    public func appAttestNonce() throws(AttestError) -> ArraySlice<UInt8> {
        guard let value = extensions[.appAttestNonce] else {
            throw AttestError(.nonce, "credential certificate has no nonce extension")
        }
        let seq = try DER.parse(value)
        let inner = try seq.children()
        guard seq.isUniversal(DER.Node.sequence), inner.count == 1, inner[0].isContext(1), inner[0].constructed else {
            throw AttestError(.nonce, "nonce extension is not SEQUENCE { [1] { OCTET STRING } }")
        }
        let octets = try inner[0].children()
        guard octets.count == 1, octets[0].isUniversal(DER.Node.octetString), !octets[0].constructed else {
            throw AttestError(.nonce, "nonce extension does not hold one OCTET STRING")
        }
        return octets[0].content
    }
}
