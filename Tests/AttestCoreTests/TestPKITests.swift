import AttestCore
import AttestTesting
import Testing

/// The test PKI's chain has Apple's shape, and survives a PEM round trip.
@Suite struct TestPKITests {
    let pki = Fixtures.pki

    static let ecdsaWithSHA256 = ObjectIdentifier("1.2.840.10045.4.3.2")
    static let ecdsaWithSHA384 = ObjectIdentifier("1.2.840.10045.4.3.3")
    static let secp384r1 = ObjectIdentifier("1.3.132.0.34")

    /// (signature algorithm OID of the TBS, basicConstraints extnValue) of a certificate.
    func shape(_ der: [UInt8]) throws
        -> (algorithm: ObjectIdentifier, basicConstraints: [UInt8]?, fields: CertificateFields) {
        let tbs = try DER.parse(der[...]).children()[0].children()
        let algorithm = try ObjectIdentifier(contentOctets: Array(tbs[2].children()[0].content))
        let fields = try CertificateFields(derEncoded: der[...])
        return (algorithm, fields.extensions[ObjectIdentifier("2.5.29.19")].map(Array.init), fields)
    }

    func leaf(nonce: [UInt8] = SHA256.hash([1]), defect: TestPKI.Defect? = nil) throws -> (SoftwareDevice, [UInt8]) {
        let device = try SoftwareDevice.generate()
        let der = try pki.issueCredentialCertificate(for: device.key.publicKey(), nonce: nonce,
                                                     notBefore: Fixtures.now - 60, notAfter: Fixtures.now + 60,
                                                     defect: defect)
        return (device, der)
    }

    @Test func rootIsASelfSignedP384CA() throws {
        let root = try shape(pki.rootCertificate.derEncoded)
        #expect(root.algorithm == Self.ecdsaWithSHA384, "the root signs itself with ecdsa-with-SHA384")
        #expect(root.fields.keyParameters == Self.secp384r1, "a P-384 key")
        #expect(root.basicConstraints == [0x30, 0x03, 0x01, 0x01, 0xFF], "basicConstraints CA:TRUE, no path length")
        #expect(pki.rootCertificate.subject
                    == "/CN=AttestEdge Test App Attestation Root CA/O=AttestEdge Test/ST=California",
                "Apple's name layout")
    }

    @Test func intermediateIsAP384CAWithPathLengthZero() throws {
        let intermediate = try shape(pki.intermediateDER)
        #expect(intermediate.algorithm == Self.ecdsaWithSHA384,
                "the root signs the intermediate with ecdsa-with-SHA384")
        #expect(intermediate.fields.keyParameters == Self.secp384r1, "a P-384 key")
        #expect(intermediate.basicConstraints == [0x30, 0x06, 0x01, 0x01, 0xFF, 0x02, 0x01, 0x00], "CA:TRUE, pathlen 0")
    }

    @Test func credentialCertificateIsAP256LeafWithTheNonce() throws {
        let nonce = SHA256.hash(Array("nonce".utf8))
        let (device, der) = try leaf(nonce: nonce)
        let credential = try shape(der)
        #expect(credential.algorithm == Self.ecdsaWithSHA256,
                "the intermediate signs leaves with ecdsa-with-SHA256, like Apple's")
        #expect(credential.fields.p256Point.map(Array.init) == device.publicKey,
                "it certifies the device's P-256 point")
        #expect(credential.basicConstraints == [0x30, 0x00], "basicConstraints CA:FALSE")
        #expect(Array(try credential.fields.appAttestNonce()) == nonce, "the nonce extension holds the nonce")
        let value = try #require(credential.fields.extensions[.appAttestNonce])
        #expect(Array(value) == [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce,
                "SEQUENCE { [1] EXPLICIT { OCTET STRING } }, byte for byte")
        let subject = try Certificate(derEncoded: der).subject
        #expect(subject.hasPrefix("/CN=\(Hex.encode(device.keyID))/OU=AAA Certification"),
                "CN is the hex keyId, as Apple's")
    }

    @Test func chainVerifiesUnderItsRootOnly() throws {
        let (_, der) = try leaf()
        #expect(throws: Never.self, "leaf ← intermediate ← root verifies under the PKI's root") {
            try pki.chainVerifier().verify(leafDER: der[...], intermediatesDER: [pki.intermediateDER[...]],
                                           at: Fixtures.now)
        }
        #expect(errorCode { try ChainVerifier.apple().verify(leafDER: der[...],
                                                             intermediatesDER: [pki.intermediateDER[...]],
                                                             at: Fixtures.now) }
                == .certificateChain, "and not under Apple's root")
    }

    @Test(arguments: TestPKI.Defect.allCases)
    func everyDefectChangesWhatItSays(_ defect: TestPKI.Defect) throws {
        let (_, der) = try leaf(defect: defect)
        let fields = try CertificateFields(derEncoded: der[...])
        let chain = errorCode { try pki.chainVerifier().verify(leafDER: der[...],
                                                               intermediatesDER: [pki.intermediateDER[...]],
                                                               at: Fixtures.now) }
        switch defect {
        case .signedByWrongKey, .expired, .notYetValid:
            #expect(chain == .certificateChain, "\(defect) breaks the chain")
        case .missingNonceExtension:
            #expect(chain == nil && fields.extensions[.appAttestNonce] == nil, "no nonce extension, chain intact")
        case .malformedNonceExtension:
            #expect(chain == nil && errorCode { try fields.appAttestNonce() } != nil, "unreadable nonce, chain intact")
        case .nonP256Key:
            #expect(chain == nil && fields.p256Point == nil && fields.keyParameters == Self.secp384r1,
                    "a P-384 key, chain intact")
        }
    }

    @Test func pemRoundTripKeepsCertificatesAndKeys() throws {
        let text = pki.pemEncoded
        let loaded = try TestPKI(pemEncoded: text)
        #expect(loaded.rootCertificate.derEncoded == pki.rootCertificate.derEncoded, "same root")
        #expect(loaded.intermediateDER == pki.intermediateDER, "same intermediate")
        #expect(loaded.intermediateKey.subjectPublicKeyInfo == pki.intermediateKey.subjectPublicKeyInfo,
                "same intermediate key")
        #expect(loaded.rootKey.subjectPublicKeyInfo == pki.rootKey.subjectPublicKeyInfo, "same root key")
        #expect(loaded.name == pki.name, "the name comes back from the root's organization")
        let device = try SoftwareDevice.generate()
        let (keyID, object) = try device.attest(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID,
                                                pki: loaded, at: Fixtures.now)
        #expect(throws: Never.self, "a reloaded PKI issues attestations the original root accepts") {
            try Fixtures.verifier().verify(attestationObject: object[...], keyID: keyID,
                                           clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID,
                                           policy: .production, at: Fixtures.now)
        }
    }

    @Test func pemOrderIsRootIntermediateIntermediateKeyRootKey() throws {
        let labels = pki.pemEncoded.split(separator: "\n").filter { $0.hasPrefix("-----BEGIN") }
        #expect(labels == ["-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----",
                           "-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----"],
                "four blocks in the documented order")
        #expect(pki.pemEncoded.hasPrefix("# AttestEdge Test: root certificate\n-----BEGIN CERTIFICATE-----"),
                "comment lines name the blocks")
    }

    @Test func pemKeysAreMatchedByPublicKeyNotOrder() throws {
        let swapped = pki.rootCertificate.pemEncoded + pki.intermediateCertificate.pemEncoded
            + pki.rootKey.pemEncoded + pki.intermediateKey.pemEncoded
        let loaded = try TestPKI(pemEncoded: swapped)
        #expect(loaded.intermediateKey.subjectPublicKeyInfo == pki.intermediateKey.subjectPublicKeyInfo,
                "keys in the other order")
    }

    @Test func pemWithAMissingOrForeignKeyIsRefused() throws {
        let certificates = pki.rootCertificate.pemEncoded + pki.intermediateCertificate.pemEncoded
        #expect(errorCode { try TestPKI(pemEncoded: certificates + pki.intermediateKey.pemEncoded) } == .keyInvalid,
                "the root key is missing")
        let foreign = try SigningKey.generate(.p384).pemEncoded
        #expect(errorCode { try TestPKI(pemEncoded: certificates + pki.intermediateKey.pemEncoded + foreign) }
                    == .keyInvalid,
                "a key that belongs to neither certificate")
        #expect(errorCode { try TestPKI(pemEncoded: String(pki.pemEncoded.dropLast(30))) } != nil,
                "a cut-off last block")
    }
}
