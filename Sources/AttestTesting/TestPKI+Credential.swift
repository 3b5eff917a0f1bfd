import AttestCore

extension TestPKI {
    /// Ways to make a credential certificate wrong on purpose, one verification failure each.
    public enum Defect: String, Sendable, CaseIterable {
        /// Signed by a fresh P-384 key instead of the intermediate's → `.certificateChain`.
        case signedByWrongKey
        /// Valid only before the requested window: expired at every instant of it → `.certificateChain`.
        case expired
        /// Valid only after the requested window: not yet valid at any instant of it → `.certificateChain`.
        case notYetValid
        /// No extension 1.2.840.113635.100.8.2 → `.nonce`.
        case missingNonceExtension
        /// The extension holds the bare OCTET STRING, without `SEQUENCE { [1] … }` → `.nonce`.
        case malformedNonceExtension
        /// The certified key is a fresh P-384 key, not the device's → `.keyID`.
        case nonP256Key
    }

    /// Issues a credential certificate for the device key, carrying `nonce`, signed by the
    /// intermediate with ecdsa-with-SHA256 like Apple's; `defect` breaks one thing on purpose.
    ///
    /// Subject: `CN=<hex SHA-256 of the device's X9.62 point>, OU=AAA Certification, O=<name>, ST=California`.
    public func issueCredentialCertificate(for devicePublicKey: ECPublicKey, nonce: [UInt8],
                                           notBefore: Timestamp, notAfter: Timestamp,
                                           defect: Defect? = nil) throws(AttestError) -> [UInt8] {
        var spki = devicePublicKey.subjectPublicKeyInfo
        if defect == .nonP256Key { spki = try SigningKey.generate(.p384).subjectPublicKeyInfo }
        var validity = (notBefore, notAfter)
        let span = max(notAfter.seconds - notBefore.seconds, 86_400)
        if defect == .expired { validity = (notBefore - span - 1, notBefore - 1) }
        if defect == .notYetValid { validity = (notAfter + 1, notAfter + span + 1) }
        var extensions = [X509Extension.basicConstraints(ca: false),
                          X509Extension.keyUsage(X509Extension.credentialUsage)]
        switch defect {
        case .missingNonceExtension: break
        case .malformedNonceExtension:
            extensions.append(X509Extension.der(.appAttestNonce, value: DERBuilder.octetString(nonce)))
        default: extensions.append(X509Extension.appAttestNonce(nonce))
        }
        let template = CertificateTemplate(
            serialNumber: SystemRandom().bytes(8), issuer: intermediateSubject,
            subject: X509Name.apple(commonName: Hex.encode(SHA256.hash(devicePublicKey.x962Point)),
                                    unit: "AAA Certification", organization: name),
            notBefore: validity.0, notAfter: validity.1, subjectPublicKeyInfo: spki,
            extensions: extensions, signatureAlgorithm: .ecdsaWithSHA256)
        if defect == .signedByWrongKey { return try template.signed(by: SigningKey.generate(.p384)) }
        return try template.signed(by: intermediateSigner)
    }
}
