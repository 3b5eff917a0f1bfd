import AttestCore
import AttestTesting
import Testing

/// ChainVerifier's cache of verified intermediates: hit on the second chain, bypassed outside
/// its window, and never a shortcut past the leaf's own checks.
@Suite struct IntermediateCacheTests {
    /// A root valid for years and an intermediate valid ten days either side of `now`.
    static let pki: TestPKI = {
        let now = Fixtures.now
        do {
            return try TestPKI.generate(name: "Cache", validFrom: now - 400 * 86_400, validUntil: now + 400 * 86_400,
                                        intermediateValidFrom: now - 10 * 86_400,
                                        intermediateValidUntil: now + 10 * 86_400)
        } catch { fatalError("cache test PKI: \(error)") }
    }()

    let verifier: AttestationVerifier

    init() throws { verifier = AttestationVerifier(chainVerifier: try Self.pki.chainVerifier()) }

    /// A fresh device's attestation made (and its leaf valid) at `time`, verified at `time`.
    func verifyNewDevice(at time: Timestamp, _ change: (inout SyntheticAttestation) -> Void = { _ in },
                         pki: TestPKI = pki) throws -> AttestError.Code? {
        let device = try SoftwareDevice.generate()
        var synthetic = device.synthetic(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID)
        change(&synthetic)
        let object = try synthetic.build(pki: pki, at: time).attestationObject
        return errorCode {
            try verifier.verify(attestationObject: object[...], keyID: device.keyID,
                                clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID, policy: .production,
                                at: time)
        }
    }

    @Test func firstChainFillsTheCacheAndTheSecondReusesIt() throws {
        #expect(verifier.chainVerifier.cachedIntermediateCount == 0, "a new verifier starts empty")
        #expect(try verifyNewDevice(at: Fixtures.now) == nil, "first attestation verifies in full")
        #expect(verifier.chainVerifier.cachedIntermediateCount == 1, "its intermediate is cached")
        #expect(try verifyNewDevice(at: Fixtures.now + 3600) == nil, "second attestation through the same intermediate")
        #expect(verifier.chainVerifier.cachedIntermediateCount == 1, "the cached entry is reused, not duplicated")
        #expect(verifier.chainVerifier.directLeafChecks == 1,
                "the second leaf is checked directly, without X509_verify_cert")
    }

    @Test func eachIntermediateHasItsOwnEntry() throws {
        let second = try TestPKI(pemEncoded: Self.pki.pemEncoded)
        #expect(second.intermediateDER == Self.pki.intermediateDER, "a reloaded PKI has the same intermediate")
        let other = try TestPKI.generate(name: "Cache 2", validFrom: Fixtures.now - 86_400,
                                         validUntil: Fixtures.now + 86_400)
        let anchors = [Self.pki.rootCertificate, other.rootCertificate]
        let both = AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: anchors))
        for pki in [Self.pki, other] {
            let device = try SoftwareDevice.generate()
            let (keyID, object) = try device.attest(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID,
                                                    pki: pki, at: Fixtures.now)
            _ = try both.verify(attestationObject: object[...], keyID: keyID, clientDataHash: Fixtures.clientDataHash,
                                appID: Fixtures.appID, policy: .production, at: Fixtures.now)
        }
        #expect(both.chainVerifier.cachedIntermediateCount == 2, "two intermediates, two entries")
    }

    @Test func onlyAnIntermediateTheChainUsedIsCached() throws {
        // Anchors holding an intermediate as well as its root (a test CA file with both):
        // OpenSSL chains a genuine leaf through the trusted intermediate and leaves the one
        // supplied in x5c unused. That one must not be cached, or everything it signs passes.
        let a = try TestPKI.generate(name: "Anchored", validFrom: Fixtures.now - 86_400,
                                     validUntil: Fixtures.now + 86_400)
        let attacker = try TestPKI.generate(name: "Attacker", validFrom: Fixtures.now - 86_400,
                                            validUntil: Fixtures.now + 86_400)
        let verifier = AttestationVerifier(chainVerifier: try ChainVerifier(trustAnchors: [a.rootCertificate,
                                                                                           a.intermediateCertificate]))
        let device = try SoftwareDevice.generate()
        var synthetic = device.synthetic(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID)
        synthetic.x5c = [try synthetic.build(pki: a, at: Fixtures.now).credentialCertificate, attacker.intermediateDER]
        let object = try synthetic.build(pki: a, at: Fixtures.now).attestationObject
        _ = try? verifier.verify(attestationObject: object[...], keyID: device.keyID,
                                 clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID, policy: .production,
                                 at: Fixtures.now)
        #expect(!verifier.chainVerifier.hasVerified(intermediateDER: attacker.intermediateDER[...], at: Fixtures.now))
        let forger = try SoftwareDevice.generate()
        let (keyID, forged) = try forger.attest(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID,
                                                pki: attacker, at: Fixtures.now)
        #expect(errorCode {
            try verifier.verify(attestationObject: forged[...], keyID: keyID, clientDataHash: Fixtures.clientDataHash,
                                appID: Fixtures.appID, policy: .production, at: Fixtures.now)
        } == .certificateChain, "a leaf signed by the attacker's CA does not chain")
    }

    @Test func timeAfterTheCachedWindowIsVerifiedInFullAndFails() throws {
        #expect(try verifyNewDevice(at: Fixtures.now) == nil, "warm the cache inside the intermediate's window")
        #expect(try verifyNewDevice(at: Fixtures.now + 11 * 86_400) == .certificateChain,
                "a day after the intermediate expires: full verification finds it expired")
        #expect(verifier.chainVerifier.cachedIntermediateCount == 1, "the failure leaves the entry as it was")
    }

    @Test func timeBeforeTheCachedWindowIsVerifiedInFullAndFails() throws {
        #expect(try verifyNewDevice(at: Fixtures.now) == nil, "warm the cache")
        #expect(try verifyNewDevice(at: Fixtures.now - 11 * 86_400) == .certificateChain,
                "a day before the intermediate is valid")
    }

    @Test func cachedWindowEndsWhereFullVerificationsDoes() throws {
        let notAfter = Self.pki.intermediateCertificate.notAfter
        let cold = try verifyNewDevice(at: notAfter)
        #expect(try verifyNewDevice(at: Fixtures.now) == nil, "warm the cache")
        #expect(try verifyNewDevice(at: notAfter - 1) == nil, "the last second of the window, through the cache")
        #expect(try verifyNewDevice(at: notAfter) == cold,
                "at the intermediate's notAfter the cache answers as a full verification does")
        #expect(cold == .certificateChain, "OpenSSL counts notAfter itself as expired")
    }

    @Test func cachedPathStillChecksTheLeafSignature() throws {
        #expect(try verifyNewDevice(at: Fixtures.now) == nil, "warm the cache")
        #expect(try verifyNewDevice(at: Fixtures.now) { $0.certificateDefect = .signedByWrongKey } == .certificateChain,
                "a leaf not signed by the cached intermediate")
    }

    @Test func cachedPathStillChecksTheLeafValidity() throws {
        #expect(try verifyNewDevice(at: Fixtures.now) == nil, "warm the cache")
        #expect(try verifyNewDevice(at: Fixtures.now) { $0.certificateDefect = .expired } == .certificateChain,
                "an expired leaf at a time inside the cached window")
        #expect(try verifyNewDevice(at: Fixtures.now) { $0.certificateDefect = .notYetValid } == .certificateChain,
                "a not-yet-valid leaf at a time inside the cached window")
    }

    @Test func failedChainIsNotCached() throws {
        let stranger = try TestPKI.generate(name: "Stranger", validFrom: Fixtures.now - 86_400,
                                            validUntil: Fixtures.now + 86_400)
        #expect(try verifyNewDevice(at: Fixtures.now, pki: stranger) == .certificateChain,
                "an intermediate from an untrusted PKI")
        #expect(verifier.chainVerifier.cachedIntermediateCount == 0, "nothing is cached from a failed chain")
    }
}
