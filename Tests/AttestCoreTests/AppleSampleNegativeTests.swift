import AttestCore
import AttestTesting
import Foundation
import Testing

/// Apple's guide sample made to fail, one way per line of the vector's `mustFailWhen`, each
/// with the step's code; and the pinned root.
@Suite struct AppleSampleNegativeTests {
    let vector: AppleGuideVector
    let object: [UInt8]
    let keyID: [UInt8]
    let clientDataHash: [UInt8]
    let verifyAt: Timestamp

    init() throws {
        vector = try AppleGuideVector.load()
        object = Vectors.bytes(vector.attestationObject_b64)
        keyID = Vectors.bytes(vector.keyId_b64)
        clientDataHash = Vectors.bytes(vector.clientDataHash_b64)
        verifyAt = try #require(Timestamp(iso8601: vector.verifyAt))
    }

    func code(keyID: [UInt8]? = nil, clientDataHash: [UInt8]? = nil, appID: String? = nil,
              policy: EnvironmentPolicy = .production, at time: Timestamp? = nil,
              verifier: AttestationVerifier? = nil) throws -> AttestError.Code? {
        let verifier = try verifier ?? AttestationVerifier(chainVerifier: .apple())
        return errorCode {
            try verifier.verify(attestationObject: object[...], keyID: keyID ?? self.keyID,
                                clientDataHash: clientDataHash ?? self.clientDataHash, appID: appID ?? vector.appId,
                                policy: policy, at: time ?? verifyAt)
        }
    }

    @Test func verifiesAtTheGuidesTime() throws {
        #expect(try code() == nil, "the untouched sample verifies at \(vector.verifyAt)")
    }

    @Test func failsAfterTheLeafsNotAfter() throws {
        let notAfter = try #require(Timestamp(iso8601: vector.leafValidity.notAfter))
        // OpenSSL treats notAfter itself as expired (X509_cmp_time counts equal as earlier),
        // one second short of RFC 5280's inclusive reading; pinned so a change is noticed.
        #expect(try code(at: notAfter - 1) == nil, "valid one second before the leaf's notAfter")
        #expect(try code(at: notAfter) == .certificateChain, "at notAfter (OpenSSL's half-open window)")
        #expect(try code(at: notAfter + 1) == .certificateChain, "one second after notAfter")
        #expect(try code(at: #require(Timestamp(iso8601: "2026-05-01T00:00:00Z"))) == .certificateChain,
                "on 2026-05-01")
    }

    @Test func failsBeforeTheLeafsNotBefore() throws {
        let notBefore = try #require(Timestamp(iso8601: vector.leafValidity.notBefore))
        #expect(try code(at: notBefore) == nil, "valid at the leaf's notBefore itself")
        #expect(try code(at: notBefore - 1) == .certificateChain, "one second before notBefore")
    }

    @Test func failsForAnotherAppID() throws {
        #expect(try code(appID: "1234567890.com.example.otherapp") == .rpIDHash, "another bundle id")
        #expect(try code(appID: "0987654321.com.example.myapp") == .rpIDHash, "another team id")
    }

    @Test func failsForAnotherKeyID() throws {
        var flipped = keyID
        flipped[0] ^= 0x01
        #expect(try code(keyID: flipped) == .keyID, "keyId with one bit flipped")
        #expect(try code(keyID: Vectors.bytes(vector.expected.credCertPublicKeySha256_b64)) == .keyID,
                "the guide's listed hash-of-the-hash is not the keyId")
    }

    @Test func failsForAnotherClientDataHash() throws {
        #expect(try code(clientDataHash: SHA256.hash(clientDataHash)) == .nonce,
                "SHA-256 of the challenge: this sample appended the raw challenge bytes")
        #expect(try code(clientDataHash: []) == .nonce, "an empty clientDataHash")
    }

    @Test func failsUnderADevelopmentOnlyPolicy() throws {
        #expect(try code(policy: .development) == .environment, "a production key for a development-only app")
        #expect(try code(policy: .both) == nil, "policy both accepts it")
    }

    @Test func failsWithATestRootAsTheOnlyTrustAnchor() throws {
        let verifier = AttestationVerifier(chainVerifier: try Fixtures.pki.chainVerifier())
        #expect(try code(verifier: verifier) == .certificateChain, "Apple's chain under a test PKI root")
    }

    @Test func verifiesWhenAppleIsOneOfSeveralAnchors() throws {
        let anchors = [Fixtures.pki.rootCertificate, try AppleAppAttestationRoot.certificate()]
        let verifier = AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: anchors))
        #expect(try code(verifier: verifier) == nil, "a test root next to Apple's does not stop Apple's chain")
    }

    @Test func embeddedRootMatchesItsPinnedFingerprint() throws {
        let root = try AppleAppAttestationRoot.certificate()
        #expect(Hex.encode(root.sha256Fingerprint) == AppleAppAttestationRoot.sha256Fingerprint,
                "SHA-256 of the embedded DER")
        #expect(AppleAppAttestationRoot.sha256Fingerprint.hasPrefix("1cb9823b")
                    && AppleAppAttestationRoot.sha256Fingerprint.hasSuffix("c932"),
                "the pin is the fingerprint the design names (1cb9823b…c932)")
        #expect(root.notAfter.iso8601 == "2045-03-15T00:00:00Z", "Apple's root runs to 2045")
    }

    @Test func embeddedRootIsApplesPublishedFile() throws {
        let text = try String(contentsOf: Vectors.directory.appendingPathComponent("Apple_App_Attestation_Root_CA.pem"),
                              encoding: .utf8)
        let published = try Certificate.certificates(pemEncoded: text)
        let embedded = try AppleAppAttestationRoot.certificate()
        #expect(published.count == 1 && published[0].derEncoded == embedded.derEncoded,
                "the embedded root is byte for byte Apple's Apple_App_Attestation_Root_CA.pem")
    }

    @Test func pinRejectsALookalikeRoot() throws {
        // Same subject, different key: the pin is what tells them apart.
        let lookalike = try TestPKI.generate(name: "Apple", validFrom: verifyAt - 86_400,
                                             validUntil: verifyAt + 86_400).rootCertificate
        #expect(Hex.encode(lookalike.sha256Fingerprint) != AppleAppAttestationRoot.sha256Fingerprint,
                "a root made to look like Apple's has another fingerprint")
    }

    @Test func intermediateIsNotPinned() throws {
        let intermediate = try Certificate(derEncoded: Vectors.bytes(vector.expected.intermediateCertificate_b64))
        #expect(Hex.encode(intermediate.sha256Fingerprint) != AppleAppAttestationRoot.sha256Fingerprint,
                "x5c[1] is Apple's intermediate, verified through the chain rather than pinned")
    }
}
