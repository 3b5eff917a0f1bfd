@testable import AttestCore
import AttestTesting
import Testing

/// Issue #40 item 1: receipts verified with OpenSSL's CMS API against Apple Root CA - G3, the
/// chain's markers required, the payload read leniently but bounded.
@Suite("Receipts") struct ReceiptTests {
    static let sample = try! AttestationObject(cborEncoded: AppleSample.attestationObject[...])
    /// Apple's sample receipt was created 2026-04-21T18:13:12Z.
    static let created = Timestamp(iso8601: "2026-04-21T18:13:12Z")!

    @Test("Apple's 2026 sample receipt verifies against G3 with the fields Apple documents")
    func appleSample() throws {
        let receipt = try ReceiptVerifier.apple().verify(Self.sample.receipt, at: AppleSample.verifyAt)
        #expect(receipt.kind == .attest)
        #expect(receipt.appID == AppleSample.appID)
        #expect(receipt.environment == "production")
        #expect(receipt.createdAt == Self.created)
        #expect(receipt.expiresAt == Timestamp(iso8601: "2026-07-20T18:13:12Z")!)
        #expect(receipt.riskMetric == nil)
        #expect(receipt.notBefore == nil)
        #expect(receipt.credentialCertificate == Array(Self.sample.x5c[0]), "field 3 is the credential certificate")
        let key = try CertificateFields(derEncoded: Self.sample.x5c[0]).subjectPublicKey
        try receipt.check(appID: AppleSample.appID, publicKey: key, at: Self.created + 60, maxAge: 300)
    }

    @Test("G3's embedded copy matches its pinned fingerprint")
    func pinnedRoot() throws {
        let root = try AppleRootCAG3.certificate()
        #expect(root.subject.contains("Apple Root CA - G3"))
        #expect(root.notAfter == Timestamp(iso8601: "2039-04-30T18:19:06Z")!)
    }

    @Test("the App Attestation root (the x5c anchor) does not verify receipts: the mix-up users hit")
    func wrongRoot() throws {
        let verifier = try ReceiptVerifier(anchor: AppleAppAttestationRoot.certificate())
        #expect(throws: AttestError(.receiptChain, "")) {
            try verifier.verify(Self.sample.receipt, at: AppleSample.verifyAt)
        }
    }

    @Test("after the signing certificate expires (2027-02-18) the sample no longer verifies")
    func expiredChain() throws {
        #expect(throws: AttestError(.receiptChain, "")) {
            try ReceiptVerifier.apple().verify(Self.sample.receipt, at: Timestamp(iso8601: "2027-03-01T00:00:00Z")!)
        }
    }

    @Test("one changed byte of Apple's signed content fails the signature")
    func tamperedSample() throws {
        var bytes = Array(Self.sample.receipt)
        let appID = Array(AppleSample.appID.utf8)
        let at = try #require(bytes.firstRange(of: appID)).lowerBound
        bytes[at] ^= 0x01
        #expect(throws: AttestError(.receiptSignature, "")) {
            try ReceiptVerifier.apple().verify(bytes, at: AppleSample.verifyAt)
        }
    }

    @Test("truncated BER, an empty input and a non-CMS input are malformed")
    func truncated() throws {
        let verifier = try ReceiptVerifier.apple()
        for input in [Array(Self.sample.receipt.prefix(2000)), [], [0x30, 0x03, 0x02, 0x01, 0x01]] {
            #expect(throws: AttestError(.receiptMalformed, "")) { try verifier.verify(input, at: AppleSample.verifyAt) }
        }
        let huge = [UInt8](repeating: 0x30, count: ReceiptVerifier.maxReceiptBytes + 1)
        #expect(throws: AttestError(.receiptMalformed, "")) { try verifier.verify(huge, at: AppleSample.verifyAt) }
    }

    @Test("the signing chain is verified once and then cached by the signer's certificate")
    func chainCache() throws {
        let verifier = try ReceiptVerifier.apple()
        #expect(verifier.cachedSigners == 0)
        _ = try verifier.verify(Self.sample.receipt, at: AppleSample.verifyAt)
        _ = try verifier.verify(Self.sample.receipt, at: AppleSample.verifyAt + 60)
        #expect(verifier.cachedSigners == 1)
        // Outside the cached window the chain is checked again, and fails.
        #expect(throws: AttestError(.receiptChain, "")) {
            try verifier.verify(Self.sample.receipt, at: Timestamp(iso8601: "2027-03-01T00:00:00Z")!)
        }
    }

    @Test("with the signer cached (the BER path), a tampered or truncated receipt is still refused")
    func cachedPathRefuses() throws {
        let verifier = try ReceiptVerifier.apple()
        _ = try verifier.verify(Self.sample.receipt, at: AppleSample.verifyAt)
        #expect(verifier.cachedSigners == 1)
        var bytes = Array(Self.sample.receipt)
        let at = try #require(bytes.firstRange(of: Array(AppleSample.appID.utf8))).lowerBound
        bytes[at] ^= 0x01
        #expect(throws: AttestError(.receiptSignature, "")) { try verifier.verify(bytes, at: AppleSample.verifyAt) }
        var signature = Array(Self.sample.receipt)
        signature[signature.count - 40] ^= 0x01  // inside the signer's signature, near the end
        #expect(throws: AttestError.self) { try verifier.verify(signature, at: AppleSample.verifyAt) }
        #expect(throws: AttestError(.receiptMalformed, "")) {
            try verifier.verify(Self.sample.receipt.dropLast(3), at: AppleSample.verifyAt)
        }
        // And the untouched receipt still verifies, with the same fields as through CMS.
        let cached = try verifier.verify(Self.sample.receipt, at: AppleSample.verifyAt)
        let fresh = try ReceiptVerifier.apple().verify(Self.sample.receipt, at: AppleSample.verifyAt)
        #expect(cached == fresh)
    }

    @Test("the BER reader takes Apple's receipt apart: the content is the payload CMS returns")
    func berShape() throws {
        let shape = try ReceiptVerifier.shape(Array(Self.sample.receipt))
        #expect(shape.certificates.count == 3)
        #expect(shape.content.count == 1349, "OpenSSL's cms -verify wrote 1349 bytes")
        #expect(try ReceiptPayload(shape.content[...]).text(2) == AppleSample.appID)
    }

    // MARK: synthetic receipts from a chain shaped like Apple's

    static let now = Timestamp(iso8601: "2026-06-01T12:00:00Z")!
    static let device = try! TestPKI.generate(validFrom: now - 86_400, validUntil: now + 86_400 * 365)

    static func authority(leafMarker: Bool = true, intermediateMarker: Bool = true) throws -> TestReceiptAuthority {
        try TestReceiptAuthority.generate(validFrom: now - 86_400, validUntil: now + 86_400 * 400,
                                          leafMarker: leafMarker, intermediateMarker: intermediateMarker)
    }

    static func credential() throws -> (certificate: [UInt8], point: [UInt8]) {
        let key = try SigningKey.generate(.p256)
        let cert = try device.issueCredentialCertificate(for: key.publicKey(), nonce: [UInt8](repeating: 7, count: 32),
                                                         notBefore: now - 60, notAfter: now + 86_400)
        return (cert, key.x962Point)
    }

    @Test("a RECEIPT from the test chain: risk metric, not-before and expiry read; checks pass")
    func syntheticReceipt() throws {
        let authority = try Self.authority()
        let (cert, point) = try Self.credential()
        let payload = TestReceiptAuthority.payload(TestReceiptAuthority.attributes(
            kind: .receipt, appID: "ABCDE12345.com.example.app", credentialCertificate: cert, createdAt: Self.now,
            riskMetric: 3))
        let receipt = try ReceiptVerifier(anchor: authority.root).verify(authority.receipt(payload), at: Self.now)
        #expect(receipt.kind == .receipt)
        #expect(receipt.riskMetric == 3)
        #expect(receipt.notBefore == Self.now + 86_400)
        #expect(receipt.expiresAt == Self.now + 90 * 86_400)
        #expect(receipt.credentialCertificateSHA256 == SHA256.hash(cert))
        try receipt.check(appID: "ABCDE12345.com.example.app", publicKey: point[...], at: Self.now + 10, maxAge: 300)
    }

    @Test("negatives: foreign root, missing markers, tampered content, duplicate field, missing risk metric")
    func syntheticNegatives() throws {
        let authority = try Self.authority()
        let (cert, _) = try Self.credential()
        let attributes = TestReceiptAuthority.attributes(kind: .receipt, appID: "ABCDE12345.com.example.app",
                                                         credentialCertificate: cert, createdAt: Self.now,
                                                         riskMetric: 1)
        let payload = TestReceiptAuthority.payload(attributes)
        let good = try authority.receipt(payload)
        let cases: [(String, AttestError.Code, () throws -> AppAttestReceipt)] = [
            ("foreign root", .receiptChain, {
                try ReceiptVerifier(anchor: Self.authority().root).verify(good, at: Self.now)
            }),
            ("App Attest's root", .receiptChain, {
                try ReceiptVerifier.apple().verify(good, at: Self.now)
            }),
            ("no leaf marker", .receiptChain, {
                let other = try Self.authority(leafMarker: false)
                return try ReceiptVerifier(anchor: other.root).verify(other.receipt(payload), at: Self.now)
            }),
            ("no intermediate marker", .receiptChain, {
                let other = try Self.authority(intermediateMarker: false)
                return try ReceiptVerifier(anchor: other.root).verify(other.receipt(payload), at: Self.now)
            }),
            ("tampered content", .receiptSignature, {
                try ReceiptVerifier(anchor: authority.root).verify(
                    authority.receipt(payload, tamper: { $0[$0.count - 3] ^= 0x01 }), at: Self.now)
            }),
            ("duplicate App ID", .receiptMalformed, {
                try ReceiptVerifier(anchor: authority.root).verify(authority.receipt(TestReceiptAuthority.payload(
                    attributes + [(2, Array("ZZZZZ99999.com.evil".utf8))])), at: Self.now)
            }),
            ("RECEIPT without a risk metric", .receiptMalformed, {
                try ReceiptVerifier(anchor: authority.root).verify(authority.receipt(TestReceiptAuthority.payload(
                    attributes.filter { $0.0 != 17 })), at: Self.now)
            }),
            ("a non-number risk metric", .receiptMalformed, {
                try ReceiptVerifier(anchor: authority.root).verify(authority.receipt(TestReceiptAuthority.payload(
                    attributes.map { $0.0 == 17 ? (17, Array("-1".utf8)) : $0 })), at: Self.now)
            }),
            ("truncated BER", .receiptMalformed, {
                try ReceiptVerifier(anchor: authority.root).verify(good.dropLast(40), at: Self.now)
            }),
        ]
        for (name, code, verify) in cases {
            do {
                let receipt = try verify()
                Issue.record("\(name): accepted \(receipt.kind)")
            } catch let error as AttestError {
                #expect(error.code == code, "\(name): \(error)")
            }
        }
    }

    @Test("checks: wrong app, wrong key, expired, stale creation")
    func checks() throws {
        let authority = try Self.authority()
        let (cert, point) = try Self.credential()
        let receipt = try ReceiptVerifier(anchor: authority.root).verify(authority.receipt(TestReceiptAuthority.payload(
            TestReceiptAuthority.attributes(kind: .attest, appID: "ABCDE12345.com.example.app",
                                            credentialCertificate: cert, createdAt: Self.now))), at: Self.now)
        let app = "ABCDE12345.com.example.app"
        #expect(throws: AttestError(.receiptAppID, "")) {
            try receipt.check(appID: "ABCDE12345.com.example.other", publicKey: point[...], at: Self.now)
        }
        let otherKey = try SigningKey.generate(.p256).x962Point
        #expect(throws: AttestError(.receiptKey, "")) {
            try receipt.check(appID: app, publicKey: otherKey[...], at: Self.now)
        }
        #expect(throws: AttestError(.receiptStale, "")) {
            try receipt.check(appID: app, publicKey: point[...], at: Self.now + 91 * 86_400)
        }
        #expect(throws: AttestError(.receiptStale, "")) {
            try receipt.check(appID: app, publicKey: point[...], at: Self.now + 301, maxAge: 300)
        }
        try receipt.check(appID: app, publicKey: point[...], at: Self.now + 299, maxAge: 300)
    }
}
