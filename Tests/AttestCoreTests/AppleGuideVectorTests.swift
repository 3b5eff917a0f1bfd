import AttestCore
import Testing

/// Apple's attestation object validation guide, step by step, on its real 2026 sample.
@Suite struct AppleGuideVectorTests {
    let vector: AppleGuideVector
    let object: AttestationObject
    let verifyAt: Timestamp

    init() throws {
        vector = try AppleGuideVector.load()
        object = try AttestationObject(cborEncoded: Vectors.bytes(vector.attestationObject_b64)[...])
        verifyAt = try #require(Timestamp(iso8601: vector.verifyAt))
    }

    func verifier() throws -> AttestationVerifier { AttestationVerifier(chainVerifier: try .apple()) }

    @Test func x5cHoldsTheGuidesLeafAndIntermediate() throws {
        #expect(object.fmt == "apple-appattest")
        #expect(object.x5c.count == 2)
        #expect(Array(object.x5c[0]) == Vectors.bytes(vector.expected.leafCertificate_b64),
                "x5c[0] is the guide's leaf")
        #expect(Array(object.x5c[1]) == Vectors.bytes(vector.expected.intermediateCertificate_b64),
                "x5c[1] is the guide's intermediate")
    }

    @Test func compositeIsAuthDataFollowedByClientDataHash() {
        let composite = Array(object.authData) + Vectors.bytes(vector.clientDataHash_b64)
        #expect(composite == Vectors.bytes(vector.expected.authDataPlusClientDataHash_b64))
    }

    @Test func nonceIsSHA256OfTheComposite() {
        let nonce = SHA256.hash(object.authData, Vectors.bytes(vector.clientDataHash_b64))
        #expect(nonce == Vectors.bytes(vector.expected.nonce_b64))
    }

    @Test func credCertNonceExtensionHoldsTheNonce() throws {
        let fields = try CertificateFields(derEncoded: object.x5c[0])
        #expect(Array(try fields.appAttestNonce()) == Vectors.bytes(vector.expected.credCertNonceOctetString_b64))
    }

    /// SHA-256 of the X9.62 point equals keyId. The value the guide lists for this step
    /// (`inGjK2Jb…`) is not that hash: it is SHA-256 of the keyId bytes, a hash of the hash.
    /// Both facts are pinned so a change to either the code or the vector is noticed.
    @Test func credCertPublicKeyHashesToTheKeyID() throws {
        let point = try #require(try CertificateFields(derEncoded: object.x5c[0]).p256Point)
        #expect(point.count == 65 && point.first == 0x04, "uncompressed X9.62 point")
        #expect(SHA256.hash(point) == Vectors.bytes(vector.keyId_b64), "SHA-256(point) is the keyId")
        #expect(SHA256.hash(SHA256.hash(point)) == Vectors.bytes(vector.expected.credCertPublicKeySha256_b64),
                "the guide's listed value is SHA-256(SHA-256(point))")
    }

    @Test func appIDHashEqualsTheRPIDHash() throws {
        let authData = try AuthenticatorData(bytes: object.authData)
        #expect(vector.appId == "\(vector.teamId).\(vector.bundleId)")
        #expect(SHA256.hash(vector.appId.utf8) == Vectors.bytes(vector.expected.appIdSha256_b64))
        #expect(Array(authData.rpIDHash) == Vectors.bytes(vector.expected.rpIdHash_b64))
    }

    @Test func authenticatorDataFields() throws {
        let authData = try AuthenticatorData(bytes: object.authData)
        #expect(authData.flags == 0x40, "the sample's flags: AT set, ED clear")
        #expect(authData.signCount == vector.expected.counter)
        #expect(Hex.encode(try #require(authData.aaguid)) == vector.expected.aaguid_hex)
        #expect(Array(try #require(authData.credentialID)) == Vectors.bytes(vector.expected.credentialId_b64))
    }

    @Test func extensionsAreReadThoughTheExtensionFlagIsClear() throws {
        let authData = try AuthenticatorData(bytes: object.authData)
        #expect(authData.flags & AuthenticatorData.extensionDataFlag == 0)
        #expect(authData.validationCategory == vector.expected.extensions.apple_validation_category_01_uint32)
        #expect(authData.bundleVersion == vector.expected.extensions.apple_bundle_version_01)
    }

    @Test func leafValidityIsTheVectors() throws {
        let leaf = try Certificate(derEncoded: object.x5c[0])
        #expect(leaf.notBefore.iso8601 == vector.leafValidity.notBefore)
        #expect(leaf.notAfter.iso8601 == vector.leafValidity.notAfter)
    }

    @Test func wholeAttestationVerifiesAtTheGuidesTime() throws {
        let result = try verifier().verify(
            attestationObject: Vectors.bytes(vector.attestationObject_b64)[...], keyID: Vectors.bytes(vector.keyId_b64),
            clientDataHash: Vectors.bytes(vector.clientDataHash_b64), appID: vector.appId,
            policy: .production, at: verifyAt)
        #expect(result.environment == .production)
        #expect(result.signCount == 0)
        #expect(SHA256.hash(result.publicKey) == Vectors.bytes(vector.keyId_b64))
        #expect(result.validationCategory == 1)
        #expect(result.bundleVersion == "1")
        #expect(result.receipt.count == object.receipt.count && !result.receipt.isEmpty)
    }
}
