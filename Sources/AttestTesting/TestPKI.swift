import AttestCore

/// A certificate authority shaped like Apple's App Attest CA, for tests, the software device
/// and demos.
///
/// ```
/// root          P-384, self-signed ecdsa-with-SHA384, CA, keyCertSign | cRLSign
///  └ intermediate P-384, ecdsa-with-SHA384 by the root, CA pathlen 0, keyCertSign | cRLSign
///     └ credential certificate  P-256 device key, ecdsa-with-SHA256 by the intermediate, not a CA,
///        extension 1.2.840.113635.100.8.2 = SEQUENCE { [1] EXPLICIT OCTET STRING nonce }
/// ```
/// A verifier trusts it only when its root is passed as a trust anchor (`chainVerifier()`).
/// Immutable; the PEM form (`pemEncoded`) lets a data directory keep one across runs.
public struct TestPKI: Sendable {
    public let name: String
    public let rootCertificate: Certificate
    public let intermediateCertificate: Certificate
    public let rootKey: SigningKey
    public let intermediateKey: SigningKey
    let intermediateSigner: DigestSigner
    /// The intermediate's subject `Name` (DER): the credential certificates' issuer.
    let intermediateSubject: [UInt8]

    init(name: String, rootCertificate: Certificate, intermediateCertificate: Certificate,
         rootKey: SigningKey, intermediateKey: SigningKey) throws(AttestError) {
        self.name = name
        self.rootCertificate = rootCertificate
        self.intermediateCertificate = intermediateCertificate
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        intermediateSigner = try DigestSigner(intermediateKey)
        intermediateSubject = try Array(
            CertificateTemplate.tbsFields(of: intermediateCertificate.derEncoded)[5].encoded)
    }

    /// A fresh root and intermediate, both valid from `validFrom` to `validUntil` unless the
    /// intermediate's window is given (to test an intermediate that expires before its root).
    public static func generate(name: String = "AttestEdge Test", validFrom: Timestamp, validUntil: Timestamp,
                                intermediateValidFrom: Timestamp? = nil,
                                intermediateValidUntil: Timestamp? = nil) throws(AttestError) -> TestPKI {
        let rootKey = try SigningKey.generate(.p384)
        let intermediateKey = try SigningKey.generate(.p384)
        let rootSPKI = rootKey.subjectPublicKeyInfo, intermediateSPKI = intermediateKey.subjectPublicKeyInfo
        let rootID = X509Extension.keyIdentifier(subjectPublicKeyInfo: rootSPKI)
        let rootName = X509Name.apple(commonName: "\(name) App Attestation Root CA", organization: name)
        let root = CertificateTemplate(
            serialNumber: SystemRandom().bytes(16), issuer: rootName, subject: rootName,
            notBefore: validFrom, notAfter: validUntil, subjectPublicKeyInfo: rootSPKI,
            extensions: [X509Extension.basicConstraints(ca: true), X509Extension.subjectKeyIdentifier(rootID),
                         X509Extension.keyUsage(X509Extension.certificateSigning)],
            signatureAlgorithm: .ecdsaWithSHA384)
        let intermediate = CertificateTemplate(
            serialNumber: SystemRandom().bytes(16), issuer: rootName,
            subject: X509Name.apple(commonName: "\(name) App Attestation CA 1", organization: name),
            notBefore: intermediateValidFrom ?? validFrom, notAfter: intermediateValidUntil ?? validUntil,
            subjectPublicKeyInfo: intermediateSPKI,
            extensions: [X509Extension.basicConstraints(ca: true, pathLength: 0),
                         X509Extension.authorityKeyIdentifier(rootID),
                         X509Extension.subjectKeyIdentifier(
                             X509Extension.keyIdentifier(subjectPublicKeyInfo: intermediateSPKI)),
                         X509Extension.keyUsage(X509Extension.certificateSigning)],
            signatureAlgorithm: .ecdsaWithSHA384)
        let rootSigner = try DigestSigner(rootKey)
        return try TestPKI(name: name, rootCertificate: Certificate(derEncoded: root.signed(by: rootSigner)),
                           intermediateCertificate: Certificate(derEncoded: intermediate.signed(by: rootSigner)),
                           rootKey: rootKey, intermediateKey: intermediateKey)
    }

    /// A chain verifier trusting exactly this PKI's root.
    public func chainVerifier() throws(AttestError) -> ChainVerifier {
        try ChainVerifier(trustAnchors: [rootCertificate])
    }

    /// The intermediate's DER, the second `x5c` entry.
    public var intermediateDER: [UInt8] { intermediateCertificate.derEncoded }
}
