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

    // What ChainVerifier's cached path checks without OpenSSL (see `VerifiedIntermediate`).
    /// The TBSCertificate, whole: the bytes the issuer signed.
    let tbsCertificate: ArraySlice<UInt8>
    /// 0 for v1 (no `[0]` field), 2 for v3.
    let version: Int
    /// The encoded AlgorithmIdentifiers inside the TBSCertificate and after it.
    let tbsSignatureAlgorithm: ArraySlice<UInt8>
    let signatureAlgorithm: ArraySlice<UInt8>
    /// The signature BIT STRING's content, unused-bits octet included.
    let signatureBits: ArraySlice<UInt8>
    /// The encoded issuer and subject Names.
    let issuer: ArraySlice<UInt8>
    let subject: ArraySlice<UInt8>
    /// The validity, when both times are plain UTCTime/GeneralizedTime `…Z` (else nil).
    let notBefore: Timestamp?
    let notAfter: Timestamp?
    /// Extensions marked critical (BOOLEAN content exactly 0xFF, DER's TRUE).
    let criticalExtensions: Set<ObjectIdentifier>
    /// Extensions whose critical BOOLEAN is present but is not DER's TRUE: `01`…`FE` (OpenSSL
    /// reads any nonzero octet as TRUE), `00` (an explicit DEFAULT, which DER forbids) or not one
    /// octet long. The cached path leaves these to `X509_verify_cert`.
    let irregularCriticalFlags: Set<ObjectIdentifier>

    public init(derEncoded der: ArraySlice<UInt8>) throws(AttestError) {
        let cert = try DER.parse(der)
        let top = try cert.children()
        guard cert.isUniversal(DER.Node.sequence), top.count == 3, top[0].isUniversal(DER.Node.sequence) else {
            throw AttestError(.derMalformed, "not a certificate")
        }
        guard top[1].isUniversal(DER.Node.sequence), top[2].isUniversal(DER.Node.bitString) else {
            throw AttestError(.derMalformed, "not a certificate")
        }
        var tbs = try top[0].children()[...]
        var version = 0
        if let first = tbs.first, first.isContext(0) {
            let inner = try first.children()
            guard inner.count == 1, inner[0].isUniversal(DER.Node.integer), inner[0].content.count == 1 else {
                throw AttestError(.derMalformed, "malformed certificate version")
            }
            version = Int(inner[0].content.first!)
            tbs = tbs.dropFirst()
        }
        guard tbs.count >= 6 else { throw AttestError(.derMalformed, "TBSCertificate has \(tbs.count) fields") }
        let t = tbs.startIndex
        let validity = try tbs[t + 3].children()
        guard validity.count == 2 else { throw AttestError(.derMalformed, "malformed validity") }
        tbsCertificate = top[0].encoded
        self.version = version
        tbsSignatureAlgorithm = tbs[t + 1].encoded
        signatureAlgorithm = top[1].encoded
        signatureBits = top[2].content
        issuer = tbs[t + 2].encoded
        subject = tbs[t + 4].encoded
        notBefore = Timestamp(derTime: validity[0])
        notAfter = Timestamp(derTime: validity[1])
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
        var critical = Set<ObjectIdentifier>(), irregular = Set<ObjectIdentifier>()
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
                if parts.count == 3 {
                    if parts[1].content.elementsEqual([0xFF]) { critical.insert(oid) } else { irregular.insert(oid) }
                }
            }
        }
        extensions = found
        criticalExtensions = critical
        irregularCriticalFlags = irregular
    }

    /// The uncompressed P-256 point of an EC P-256 key, or `nil` for any other key.
    public var p256Point: ArraySlice<UInt8>? {
        guard keyAlgorithm == .ecPublicKey, keyParameters == .prime256v1,
              subjectPublicKey.count == 65, subjectPublicKey.first == 0x04 else { return nil }
        return subjectPublicKey
    }

    /// Whether basicConstraints says cA TRUE (a v3 CA certificate).
    public var isCertificateAuthority: Bool {
        guard let value = extensions[.basicConstraints], let seq = try? DER.parse(value),
              let parts = try? seq.children(),
              let first = parts.first, first.isUniversal(DER.Node.boolean) else { return false }
        return first.content.elementsEqual([0xFF])
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

extension Timestamp {
    /// A DER `Time` as RFC 5280 profiles it: UTCTime `YYMMDDHHMMSSZ` (years 1950–2049) or
    /// GeneralizedTime `YYYYMMDDHHMMSSZ`; nil for anything else.
    init?(derTime node: DER.Node) {
        let digits: Int
        switch (node.tagClass, node.constructed, node.tagNumber) {
        case (.universal, false, 23): digits = 12
        case (.universal, false, 24): digits = 14
        default: return nil
        }
        let text = Array(node.content)
        guard text.count == digits + 1, text.last == UInt8(ascii: "Z"),
              text.dropLast().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        func number(_ i: Int, _ n: Int) -> Int { text[i..<(i + n)].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        var year = digits == 12 ? number(0, 2) : number(0, 4)
        if digits == 12 { year += year < 50 ? 2000 : 1900 }
        let o = digits - 10
        let month = number(o, 2), day = number(o + 2, 2), hour = number(o + 4, 2)
        let minute = number(o + 6, 2), second = number(o + 8, 2)
        guard (1...12).contains(month), day >= 1, day <= Timestamp.daysIn(year, month),
              hour < 24, minute < 60, second < 60 else {
            return nil
        }
        self.init(civil: Civil(year: year, month: month, day: day, hour: hour, minute: minute, second: second))
    }
}
