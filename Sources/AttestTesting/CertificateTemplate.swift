import AttestCore

/// An X.509 v3 certificate to be signed: what the test PKI fills in, field by field.
///
/// ```
/// Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm AlgorithmIdentifier, signature BIT STRING }
/// TBSCertificate ::= SEQUENCE {
///     version [0] EXPLICIT INTEGER (2 = v3), serialNumber INTEGER, signature AlgorithmIdentifier,
///     issuer Name, validity SEQUENCE { notBefore Time, notAfter Time }, subject Name,
///     subjectPublicKeyInfo, extensions [3] EXPLICIT SEQUENCE OF Extension }
/// AlgorithmIdentifier ::= SEQUENCE { ecdsa-with-SHA256 | ecdsa-with-SHA384 }   ; no parameters
/// ```
public struct CertificateTemplate: Sendable {
    /// The ECDSA signature algorithms Apple's chain uses.
    public enum SignatureAlgorithm: Sendable {
        /// 1.2.840.10045.4.3.2: the credential certificate's.
        case ecdsaWithSHA256
        /// 1.2.840.10045.4.3.3: the root's and the intermediate's.
        case ecdsaWithSHA384

        public var oid: ObjectIdentifier {
            switch self {
            case .ecdsaWithSHA256: return ObjectIdentifier("1.2.840.10045.4.3.2")
            case .ecdsaWithSHA384: return ObjectIdentifier("1.2.840.10045.4.3.3")
            }
        }

        func digest(_ bytes: [UInt8]) -> [UInt8] {
            self == .ecdsaWithSHA256 ? SHA256.hash(bytes) : SHA384.hash(bytes)
        }
    }

    /// Serial number magnitude, big-endian.
    public var serialNumber: [UInt8]
    /// DER `Name`s (see `X509Name`).
    public var issuer: [UInt8]
    public var subject: [UInt8]
    public var notBefore: Timestamp
    public var notAfter: Timestamp
    /// DER SubjectPublicKeyInfo of the certified key.
    public var subjectPublicKeyInfo: [UInt8]
    /// DER `Extension`s in order (see `X509Extension`); none omits the `[3]` field.
    public var extensions: [[UInt8]]
    public var signatureAlgorithm: SignatureAlgorithm

    public init(serialNumber: [UInt8], issuer: [UInt8], subject: [UInt8], notBefore: Timestamp, notAfter: Timestamp,
                subjectPublicKeyInfo: [UInt8], extensions: [[UInt8]], signatureAlgorithm: SignatureAlgorithm) {
        self.serialNumber = serialNumber
        self.issuer = issuer
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectPublicKeyInfo = subjectPublicKeyInfo
        self.extensions = extensions
        self.signatureAlgorithm = signatureAlgorithm
    }

    /// The DER TBSCertificate.
    public var tbsCertificate: [UInt8] {
        var fields = [
            DERBuilder.explicit(0, DERBuilder.integer(2)),
            DERBuilder.integer(magnitude: serialNumber),
            algorithmIdentifier,
            issuer,
            DERBuilder.sequence([DERBuilder.time(notBefore), DERBuilder.time(notAfter)]),
            subject,
            subjectPublicKeyInfo,
        ]
        if !extensions.isEmpty { fields.append(DERBuilder.explicit(3, DERBuilder.sequence(extensions))) }
        return DERBuilder.sequence(fields)
    }

    /// The DER certificate, signed by `key` with `signatureAlgorithm` (whatever the key's curve).
    public func signed(by key: SigningKey) throws(AttestError) -> [UInt8] {
        try signed(by: DigestSigner(key))
    }

    func signed(by signer: DigestSigner) throws(AttestError) -> [UInt8] {
        let tbs = tbsCertificate
        let signature = try signer.sign(digest: signatureAlgorithm.digest(tbs))
        return DERBuilder.sequence([tbs, algorithmIdentifier, DERBuilder.bitString(signature)])
    }

    /// The TBSCertificate fields of a v3 certificate's DER: `[0] version`, serial, signature,
    /// issuer, validity, subject, subjectPublicKeyInfo, …
    static func tbsFields(of der: [UInt8]) throws(AttestError) -> [DER.Node] {
        let top = try DER.parse(der[...]).children()
        guard let tbs = top.first, tbs.constructed else { throw AttestError(.derMalformed, "not a certificate") }
        let fields = try tbs.children()
        guard fields.count > 6, fields[0].isContext(0) else { throw AttestError(.derMalformed, "not a v3 certificate") }
        return fields
    }

    private var algorithmIdentifier: [UInt8] { DERBuilder.sequence([DERBuilder.oid(signatureAlgorithm.oid)]) }
}
