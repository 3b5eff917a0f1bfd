@testable import AttestCore
import Testing

/// Issue #40 item 5(a): receipts Apple really signed — the production ATTEST receipt of Apple's
/// 2026 guide and public sandbox ATTEST and RECEIPT receipts (`RealReceiptFixture`) — verified
/// against Apple Root CA - G3 at the time each was recorded, every field Apple documents compared
/// with what its source states, and each refused outside its signing certificate's validity and
/// with one byte of its signature changed.
@Suite("Real receipts") struct RealReceiptTests {
    @Test("verifies at its recorded time with the fields its source states", arguments: RealReceiptFixture.all)
    func verifies(_ fixture: RealReceiptFixture) throws {
        let receipt = try ReceiptVerifier.apple().verify(fixture.receipt, at: fixture.recorded)
        let expected = fixture.expected
        #expect(receipt.kind.rawValue == expected.type, "receipt type (6)")
        #expect(receipt.appID == expected.appId, "App ID (2)")
        #expect(receipt.appID == fixture.teamId + "." + fixture.bundleId, "App ID (2) is TEAMID.bundleID")
        #expect(receipt.environment == expected.environment, "environment (7)")
        #expect(receipt.createdAt == fixture.created, "creation time (12)")
        #expect(receipt.notBefore == expected.notBefore.map(RealReceiptFixture.time), "not before (19)")
        #expect(receipt.expiresAt == RealReceiptFixture.time(expected.expiresAt), "expiration time (21)")
        #expect(receipt.riskMetric == expected.riskMetric, "risk metric (17)")
        #expect(receipt.token == expected.token, "token (5)")
        let payload = try ReceiptPayload(ReceiptVerifier.shape(fixture.receipt).content[...])
        #expect(payload.values[4].map(Array.init) == Vectors.bytes(expected.clientHash_b64), "client hash (4)")
        // Field 3 is the credential certificate of the key the receipt is about: its key hashes
        // to the source's keyId and is the source's public key.
        let certificate = try CertificateFields(derEncoded: receipt.credentialCertificate[...])
        #expect(SHA256.hash(certificate.subjectPublicKey) == Vectors.bytes(fixture.keyId_b64), "attested key (3)")
        if let spki = fixture.publicKey_spki_b64 {
            #expect(Array(certificate.subjectPublicKeyInfo) == Vectors.bytes(spki), "attested key (3) is the source's")
        }
        #expect(receipt.credentialCertificateSHA256 == SHA256.hash(receipt.credentialCertificate))
        // Apple's checks for a receipt just obtained pass at its creation.
        try receipt.check(appID: expected.appId, publicKey: certificate.subjectPublicKey, at: fixture.created,
                          maxAge: 300)
    }

    @Test("the cached signer path reads it exactly as the CMS path does", arguments: RealReceiptFixture.all)
    func cachedPath(_ fixture: RealReceiptFixture) throws {
        let verifier = try ReceiptVerifier.apple()
        let first = try verifier.verify(fixture.receipt, at: fixture.recorded)
        #expect(verifier.cachedSigners == 1)
        #expect(verifier.contentFromCachedSigner(fixture.receipt, at: fixture.recorded + 60) != nil,
                "the BER reader takes this receipt's shape")
        let cached = try verifier.verify(fixture.receipt, at: fixture.recorded + 60)
        #expect(cached == first)
        #expect(verifier.cachedSigners == 1)
    }

    /// OpenSSL takes a certificate as valid from its notBefore up to, not including, its notAfter.
    @Test("valid from its signing certificate's notBefore to the second before its notAfter, refused outside",
          arguments: RealReceiptFixture.all)
    func validityWindow(_ fixture: RealReceiptFixture) throws {
        let bytes = fixture.receipt
        for inside in [fixture.signerNotBefore, fixture.signerNotAfter - 1] {
            _ = try ReceiptVerifier.apple().verify(bytes, at: inside)
        }
        for outside in [fixture.signerNotBefore - 1, fixture.signerNotAfter] {
            #expect(throws: AttestError(.receiptChain, ""), "at \(outside.iso8601)") {
                try ReceiptVerifier.apple().verify(bytes, at: outside)
            }
        }
        // A verifier that cached the signer at the recorded time refuses it after expiry too.
        let cached = try ReceiptVerifier.apple()
        _ = try cached.verify(bytes, at: fixture.recorded)
        #expect(throws: AttestError(.receiptChain, "")) { try cached.verify(bytes, at: fixture.signerNotAfter) }
    }

    @Test("one changed byte of the signature fails it, through CMS and through the cached signer",
          arguments: RealReceiptFixture.all)
    func flippedSignature(_ fixture: RealReceiptFixture) throws {
        let bytes = fixture.receipt
        let signature = try ReceiptVerifier.shape(bytes).signature
        // ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }: a byte inside r, and s's last byte.
        for at in [signature.startIndex + 10, signature.endIndex - 1] {
            var tampered = bytes
            tampered[at] ^= 0x01
            #expect(throws: AttestError(.receiptSignature, ""), "byte \(at)") {
                try ReceiptVerifier.apple().verify(tampered, at: fixture.recorded)
            }
            let cached = try ReceiptVerifier.apple()
            _ = try cached.verify(bytes, at: fixture.recorded)
            #expect(throws: AttestError(.receiptSignature, ""), "byte \(at), signer cached") {
                try cached.verify(tampered, at: fixture.recorded)
            }
        }
    }

    @Test("Apple's checks refuse it for another app, another key, and once it has expired",
          arguments: RealReceiptFixture.all)
    func checks(_ fixture: RealReceiptFixture) throws {
        let receipt = try ReceiptVerifier.apple().verify(fixture.receipt, at: fixture.recorded)
        let key = try CertificateFields(derEncoded: receipt.credentialCertificate[...]).subjectPublicKey
        let expires = RealReceiptFixture.time(fixture.expected.expiresAt)
        #expect(throws: AttestError(.receiptAppID, "")) {
            try receipt.check(appID: fixture.teamId + ".com.example.other", publicKey: key, at: fixture.created)
        }
        let other = try #require(RealReceiptFixture.all.first(where: { $0.keyId_b64 != fixture.keyId_b64 }))
        let otherReceipt = try ReceiptVerifier.apple().verify(other.receipt, at: other.recorded)
        let otherKey = try CertificateFields(derEncoded: otherReceipt.credentialCertificate[...]).subjectPublicKey
        #expect(throws: AttestError(.receiptKey, "")) {
            try receipt.check(appID: fixture.expected.appId, publicKey: otherKey, at: fixture.created)
        }
        #expect(throws: AttestError(.receiptStale, "")) {
            try receipt.check(appID: fixture.expected.appId, publicKey: key, at: expires)
        }
        #expect(throws: AttestError(.receiptStale, "")) {
            try receipt.check(appID: fixture.expected.appId, publicKey: key, at: fixture.created + 301, maxAge: 300)
        }
        try receipt.check(appID: fixture.expected.appId, publicKey: key, at: expires - 1)
    }

    @Test("the fixtures cover both kinds, both environments, both encodings and several risk metrics")
    func coverage() throws {
        let all = RealReceiptFixture.all
        #expect(Set(all.map(\.expected.type)) == ["ATTEST", "RECEIPT"])
        #expect(Set(all.map(\.expected.environment)) == ["production", "sandbox"])
        #expect(Set(all.compactMap(\.expected.riskMetric)) == [1, 2, 3])
        // Indefinite-length BER (0x30 0x80) as Apple usually sends, and definite-length DER.
        let heads = Set(all.map { Array($0.receipt.prefix(2)) == [0x30, 0x80] })
        #expect(heads == [true, false])
    }
}
