/// Verifies App Attest attestation objects: Apple's nine steps, each with its own error code.
///
/// 1. `fmt` is `apple-appattest` and `attStmt` holds `x5c` and `receipt`      → `.format`
/// 2. `x5c` chains from the credential certificate (not a CA) to a trust anchor at `time` → `.certificateChain`
/// 3–4. nonce = SHA-256(authData ‖ clientDataHash) equals the credential certificate's
///    extension 1.2.840.113635.100.8.2                                            → `.nonce`
/// 5. SHA-256 of the certificate's public key (X9.62 uncompressed) equals keyId  → `.keyID`
/// 6. authData's rpIDHash equals SHA-256 of the App ID                          → `.rpIDHash`
/// 7. signCount is 0                                                            → `.counter`
/// 8. aaguid is production or development and the policy allows it             → `.environment`
/// 9. credentialID equals keyId                                                 → `.credentialID`
///
/// `clientDataHash` is opaque bytes: the HTTP layer derives it from the challenge; Apple's
/// guide sample appends the raw challenge instead of its hash, and still verifies.
public struct AttestationVerifier: Sendable {
    public let chainVerifier: ChainVerifier

    public init(chainVerifier: ChainVerifier) { self.chainVerifier = chainVerifier }

    public func verify(attestationObject: ArraySlice<UInt8>, keyID: [UInt8], clientDataHash: [UInt8],
                       appID: String, policy: EnvironmentPolicy,
                       at time: Timestamp) throws(AttestError) -> VerifiedAttestation {
        try verify(AttestationObject(cborEncoded: attestationObject), keyID: keyID, clientDataHash: clientDataHash,
                   appID: appID, policy: policy, at: time)
    }

    public func verify(_ object: AttestationObject, keyID: [UInt8], clientDataHash: [UInt8],
                       appID: String, policy: EnvironmentPolicy,
                       at time: Timestamp) throws(AttestError) -> VerifiedAttestation {
        // Step 2: the chain.
        let fields = try chainVerifier.verifiedLeafFields(leafDER: object.x5c[0],
                                                          intermediatesDER: Array(object.x5c.dropFirst()), at: time)
        // x5c in the wrong order still chains (the intermediate alone reaches the root): the
        // first certificate must be the end-entity credential certificate.
        guard !fields.isCertificateAuthority else {
            throw AttestError(.certificateChain, "x5c[0] is a CA certificate, not the credential certificate")
        }
        let authData: AuthenticatorData
        do { authData = try AuthenticatorData(bytes: object.authData) } catch {
            throw AttestError(.format, "authData: \(error.reason)")
        }
        // Steps 3–4: the nonce.
        let nonce = SHA256.hash(object.authData, clientDataHash)
        let certNonce: ArraySlice<UInt8>
        do { certNonce = try fields.appAttestNonce() } catch {
            throw AttestError(.nonce, error.reason)
        }
        guard certNonce.elementsEqual(nonce) else {
            throw AttestError(.nonce, "SHA-256(authData ‖ clientDataHash) differs from the certificate's nonce")
        }
        // Step 5: the key identifier.
        guard let point = fields.p256Point else {
            throw AttestError(.keyID, "credential certificate key is not an uncompressed P-256 point")
        }
        guard SHA256.hash(point) == keyID else {
            throw AttestError(.keyID, "SHA-256 of the credential public key differs from keyId")
        }
        // Step 6: the App ID.
        guard authData.rpIDHash.elementsEqual(SHA256.hash(appID.utf8)) else {
            throw AttestError(.rpIDHash, "rpIDHash is not SHA-256(\"\(appID)\")")
        }
        // Step 7: the counter.
        guard authData.signCount == 0 else {
            throw AttestError(.counter, "signCount is \(authData.signCount), not 0")
        }
        // Step 8: the environment.
        guard let aaguid = authData.aaguid, let environment = AppAttestEnvironment(aaguid: aaguid) else {
            throw AttestError(.environment, "aaguid is neither appattest nor appattestdevelop")
        }
        guard policy.allows(environment) else {
            throw AttestError(.environment, "\(environment.rawValue) key but the app allows \(policy.rawValue)")
        }
        // Step 9: the credential id.
        guard let credentialID = authData.credentialID, credentialID.elementsEqual(keyID) else {
            throw AttestError(.credentialID, "credentialId differs from keyId")
        }
        return VerifiedAttestation(publicKey: Array(point), environment: environment, signCount: authData.signCount,
                                   receipt: Array(object.receipt), validationCategory: authData.validationCategory,
                                   bundleVersion: authData.bundleVersion, nonce: nonce)
    }
}

/// What a valid attestation establishes.
public struct VerifiedAttestation: Sendable, Hashable {
    /// The device key as an uncompressed X9.62 point (65 bytes).
    public let publicKey: [UInt8]
    public let environment: AppAttestEnvironment
    public let signCount: UInt32
    /// Apple's receipt (PKCS #7), kept for fraud-metric refreshes.
    public let receipt: [UInt8]
    /// `apple_validation_category_01`, when present.
    public let validationCategory: UInt32?
    /// `apple_bundle_version_01`, when present.
    public let bundleVersion: String?
    public let nonce: [UInt8]
}
