import AttestCore
import AttestTesting
import Testing

/// Apple's nine steps on synthetic attestations from a test PKI, one failure per step and
/// code, and the positives for each environment and policy.
@Suite struct AttestationStepTests {
    let device: SoftwareDevice
    let verifier: AttestationVerifier

    init() throws {
        device = try SoftwareDevice.generate()
        verifier = try Fixtures.verifier()
    }

    /// The device's attestation for `Fixtures.appID`, adjusted by `change`.
    func attestation(_ environment: AppAttestEnvironment = .production,
                     _ change: (inout SyntheticAttestation) throws -> Void = { _ in }) throws -> [UInt8] {
        var synthetic = device.synthetic(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID,
                                         environment: environment)
        try change(&synthetic)
        return try synthetic.build(pki: Fixtures.pki, at: Fixtures.now).attestationObject
    }

    func verify(_ object: [UInt8], keyID: [UInt8]? = nil, clientDataHash: [UInt8] = Fixtures.clientDataHash,
                appID: String = Fixtures.appID, policy: EnvironmentPolicy = .production,
                at time: Timestamp = Fixtures.now) throws -> VerifiedAttestation {
        try verifier.verify(attestationObject: object[...], keyID: keyID ?? device.keyID,
                            clientDataHash: clientDataHash, appID: appID, policy: policy, at: time)
    }

    /// The code verifying the adjusted attestation fails with (nil when it verifies).
    func failure(_ environment: AppAttestEnvironment = .production, policy: EnvironmentPolicy = .production,
                 _ change: (inout SyntheticAttestation) throws -> Void) throws -> AttestError.Code? {
        let object = try attestation(environment, change)
        return errorCode { try verify(object, policy: policy) }
    }

    // MARK: Positives.

    @Test func productionKeyVerifiesUnderProductionPolicy() throws {
        let result = try verify(attestation(.production))
        #expect(result.environment == .production, "aaguid appattest + 7 zeros reads as production")
        #expect(result.publicKey == device.publicKey, "the verified key is the device's X9.62 point")
        #expect(result.signCount == 0, "an attestation's counter is 0")
        #expect(result.receipt == Array("AttestEdge synthetic receipt".utf8), "the receipt is passed through")
        #expect(result.validationCategory == 1 && result.bundleVersion == "1.0", "the Apple extensions are read")
    }

    @Test func developmentKeyVerifiesUnderDevelopmentPolicy() throws {
        let result = try verify(attestation(.development), policy: .development)
        #expect(result.environment == .development, "aaguid appattestdevelop reads as development")
    }

    @Test(arguments: AppAttestEnvironment.allCases)
    func bothPolicyAcceptsEitherEnvironment(_ environment: AppAttestEnvironment) throws {
        let result = try verify(attestation(environment), policy: .both)
        #expect(result.environment == environment, "policy both accepts a \(environment) key and reports it")
    }

    @Test func nonceIsSHA256OfAuthDataAndClientDataHash() throws {
        let built = try device.synthetic(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID)
            .build(pki: Fixtures.pki, at: Fixtures.now)
        let result = try verify(built.attestationObject)
        #expect(result.nonce == SHA256.hash(built.authenticatorData + Fixtures.clientDataHash),
                "nonce = SHA-256(authData ‖ clientDataHash)")
        #expect(built.keyID == device.keyID, "the built keyId is the device's")
    }

    // MARK: Step 1: format.

    @Test func wrongFmtFailsFormat() throws {
        #expect(try failure { $0.fmt = "packed" } == .format, "fmt \"packed\" is not apple-appattest")
    }

    @Test func missingFmtFailsFormat() throws {
        #expect(try failure { $0.fmt = nil } == .format, "an object without fmt")
    }

    @Test func missingX5CFailsFormat() throws {
        #expect(try failure { $0.includesX5C = false } == .format, "attStmt without x5c")
    }

    @Test func x5cWithOnlyTheLeafFailsFormat() throws {
        let leafOnly = try attestation()
        let leaf = try AttestationObject(cborEncoded: leafOnly[...]).x5c[0]
        #expect(try failure { $0.x5c = [Array(leaf)] } == .format,
                "x5c must hold the credential and intermediate certificates")
    }

    @Test func missingReceiptFailsFormat() throws {
        #expect(try failure { $0.includesReceipt = false } == .format, "attStmt without receipt")
    }

    @Test func objectThatIsNotAMapFailsFormat() throws {
        #expect(errorCode { try verify(CBORWriter.encode(.array([]))) } == .format,
                "a CBOR array is not an attestation object")
    }

    @Test func bytesThatAreNotCBORFailCBORMalformed() throws {
        #expect(errorCode { try verify([0xFF, 0x00]) } == .cborMalformed, "bytes that are not CBOR")
    }

    // MARK: Step 2: the certificate chain.

    @Test(arguments: [TestPKI.Defect.signedByWrongKey, .expired, .notYetValid])
    func chainDefectFailsCertificateChain(_ defect: TestPKI.Defect) throws {
        #expect(try failure { $0.certificateDefect = defect } == .certificateChain, "credential certificate \(defect)")
    }

    @Test func intermediateFromAnotherPKIFailsCertificateChain() throws {
        let other = try TestPKI.generate(name: "Other", validFrom: Fixtures.now - 86_400,
                                         validUntil: Fixtures.now + 86_400)
        let code = try failure { synthetic in
            let leaf = try synthetic.build(pki: other, at: Fixtures.now).credentialCertificate
            synthetic.x5c = [leaf, other.intermediateDER]
        }
        #expect(code == .certificateChain, "a chain to a root the verifier does not trust")
    }

    @Test func reversedChainFailsCertificateChain() throws {
        let object = try AttestationObject(cborEncoded: attestation()[...])
        #expect(try failure { $0.x5c = object.x5c.reversed().map(Array.init) } == .certificateChain,
                "x5c must start with the credential certificate")
    }

    @Test func leafExpiredAtVerificationTimeFailsCertificateChain() throws {
        let object = try attestation()
        #expect(errorCode { try verify(object, at: Fixtures.now + 3 * 86_400) } == .certificateChain,
                "verified three days later, after the leaf's notAfter")
    }

    @Test func garbageCertificateFailsCertificateChain() throws {
        #expect(try failure { $0.x5c = [[0x30, 0x00], Fixtures.pki.intermediateDER] } == .certificateChain,
                "an x5c entry that is not a certificate")
    }

    // MARK: Steps 3–4: the nonce.

    @Test func certificateNonceMismatchFailsNonce() throws {
        #expect(try failure { $0.certificateNonce = SHA256.hash([0x00]) } == .nonce,
                "a certificate nonce other than SHA-256(authData ‖ clientDataHash)")
    }

    @Test func otherClientDataHashFailsNonce() throws {
        let object = try attestation()
        #expect(errorCode { try verify(object, clientDataHash: SHA256.hash(Array("other challenge".utf8))) } == .nonce,
                "verified against another challenge's clientDataHash")
    }

    @Test func missingNonceExtensionFailsNonce() throws {
        #expect(try failure { $0.certificateDefect = .missingNonceExtension } == .nonce,
                "no 1.2.840.113635.100.8.2 extension")
    }

    @Test func malformedNonceExtensionFailsNonce() throws {
        #expect(try failure { $0.certificateDefect = .malformedNonceExtension } == .nonce,
                "the extension without SEQUENCE { [1] … }")
    }

    // MARK: Step 5: keyId.

    @Test func certifiedKeyOtherThanKeyIDFailsKeyID() throws {
        let other = try SigningKey.generate(.p256).publicKey()
        #expect(try failure { $0.certificateKey = other } == .keyID,
                "the certificate certifies a key whose hash is not keyId")
    }

    @Test func otherKeyIDFailsKeyID() throws {
        let object = try attestation()
        #expect(errorCode { try verify(object, keyID: SHA256.hash(device.keyID)) } == .keyID,
                "the verifier is given another keyId")
    }

    @Test func nonP256CertificateKeyFailsKeyID() throws {
        #expect(try failure { $0.certificateDefect = .nonP256Key } == .keyID, "a P-384 credential key")
    }

    // MARK: Step 6: rpIDHash.

    @Test func rpIDHashForAnotherAppFailsRPIDHash() throws {
        #expect(try failure { $0.rpIDAppID = Fixtures.otherAppID } == .rpIDHash, "authData made for another App ID")
    }

    @Test func verifiedForAnotherAppFailsRPIDHash() throws {
        let object = try attestation()
        #expect(errorCode { try verify(object, appID: Fixtures.otherAppID) } == .rpIDHash,
                "verified for another App ID")
    }

    // MARK: Step 7: counter.

    @Test func nonZeroCounterFailsCounter() throws {
        #expect(try failure { $0.signCount = 1 } == .counter, "signCount 1 in an attestation")
    }

    // MARK: Step 8: environment.

    @Test func productionKeyUnderDevelopmentPolicyFailsEnvironment() throws {
        #expect(try failure(.production, policy: .development) { _ in } == .environment,
                "a production key, development-only app")
    }

    @Test func developmentKeyUnderProductionPolicyFailsEnvironment() throws {
        #expect(try failure(.development, policy: .production) { _ in } == .environment,
                "a development key, production-only app")
    }

    @Test func unknownAAGUIDFailsEnvironment() throws {
        #expect(try failure(policy: .both) { $0.aaguid = Array("appattestunknown".utf8) } == .environment,
                "aaguid neither appattest nor appattestdevelop, even under policy both")
    }

    // MARK: Step 9: credentialId.

    @Test func credentialIDOtherThanKeyIDFailsCredentialID() throws {
        #expect(try failure { $0.credentialID = SHA256.hash(Array("other".utf8)) } == .credentialID,
                "credentialId differs from keyId")
    }

    @Test func truncatedCredentialIDFailsCredentialID() throws {
        let id = device.keyID
        #expect(try failure { $0.credentialID = Array(id.prefix(16)) } == .credentialID,
                "credentialId is a prefix of keyId")
    }

    // MARK: Authenticator data layout.

    @Test func extensionsAbsentStillVerify() throws {
        let result = try verify(attestation { $0.extensions = nil })
        #expect(result.validationCategory == nil && result.bundleVersion == nil, "no extensions map: nothing to report")
    }

    @Test func extensionFlagSetStillVerifies() throws {
        let result = try verify(attestation {
            $0.flags = AuthenticatorData.attestedCredentialDataFlag | AuthenticatorData.extensionDataFlag
        })
        #expect(result.bundleVersion == "1.0", "with ED set the extensions are read as well")
    }

    @Test func attestedCredentialFlagClearFailsFormat() throws {
        #expect(try failure { $0.flags = 0 } == .format, "without AT the credential data cannot be read")
    }

    @Test func extensionsThatAreNotAMapFailFormat() throws {
        #expect(try failure { $0.extensions = .array([]) } == .format, "extensions must be a CBOR map")
    }
}
