import AttestCore
import AttestTesting

/// The two verification benchmarks and their raw-signature baselines.
///
/// Attestation: `AttestationVerifier` on Apple's guide sample at its time through a verifier
/// whose intermediate cache is already warm (verified once before timing), so each call is CBOR,
/// the leaf's DER, one P-384 signature check (the intermediate's key, ecdsa-with-SHA256) and the
/// nine steps' comparisons. Baseline: `RawECDSAVerifier(.p384)`.
/// Assertion: `AssertionVerifier` on one software-device assertion, key parsed once. Baseline:
/// `RawECDSAVerifier(.p256)`. A third line loads the key from its 65-byte point on every call,
/// as a service without a key cache would.
/// Receipt: `ReceiptVerifier` on the sample's receipt (CMS parse, the chain cached by its
/// signing certificate, one P-256 signature over the content, the payload). Baseline: P-256.
enum VerifyBench {
    struct Result: Encodable {
        let name: String
        let rate: Double
        let rawCurve: String
        let rawRate: Double
        /// The median of side-by-side slice ratios (see `Throughput.compare`).
        let ratio: Double

        enum CodingKeys: String, CodingKey { case name, rate, rawCurve, rawRate, ratio }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(rate.rounded(), forKey: .rate)
            try c.encode(rawCurve, forKey: .rawCurve)
            try c.encode(rawRate.rounded(), forKey: .rawRate)
            try c.encode((ratio * 1000).rounded() / 1000, forKey: .ratio)
        }
    }

    static func run(seconds: Double) throws -> [Result] {
        [try attestation(seconds: seconds), try assertion(seconds: seconds, parseKeyEachTime: false),
         try assertion(seconds: seconds, parseKeyEachTime: true), try receipt(seconds: seconds)]
    }

    static func attestation(seconds: Double) throws -> Result {
        let verifier = AttestationVerifier(chainVerifier: try .apple())
        let object = AppleSample.attestationObject, keyID = AppleSample.keyID
        func verify() throws -> VerifiedAttestation {
            try verifier.verify(attestationObject: object[...], keyID: keyID,
                                clientDataHash: AppleSample.clientDataHash, appID: AppleSample.appID,
                                policy: .production, at: AppleSample.verifyAt)
        }
        _ = try verify()
        precondition(verifier.chainVerifier.cachedIntermediateCount == 1,
                     "the warm-up verification caches the intermediate")
        let raw = try RawECDSAVerifier(curve: .p384)
        let (rate, rawRate, ratio) = Throughput.compare(seconds: seconds, { _ = try? verify() },
                                                        { _ = raw.verifyOnce() })
        return Result(name: "attestation (Apple sample, warm cache)", rate: rate, rawCurve: "P-384", rawRate: rawRate,
                      ratio: ratio)
    }

    static func receipt(seconds: Double) throws -> Result {
        let verifier = try ReceiptVerifier.apple()
        let receipt = try AttestationObject(cborEncoded: AppleSample.attestationObject[...]).receipt
        _ = try verifier.verify(receipt, at: AppleSample.verifyAt)
        precondition(verifier.cachedSigners == 1, "the warm-up verification caches the signing chain")
        let raw = try RawECDSAVerifier(curve: .p256)
        let (rate, rawRate, ratio) = Throughput.compare(seconds: seconds, {
            _ = try? verifier.verify(receipt, at: AppleSample.verifyAt)
        }, { _ = raw.verifyOnce() })
        return Result(name: "receipt (Apple sample, chain cached)", rate: rate, rawCurve: "P-256", rawRate: rawRate,
                      ratio: ratio)
    }

    static func assertion(seconds: Double, parseKeyEachTime: Bool) throws -> Result {
        var device = try SoftwareDevice.generate()
        let appID = "ABCDE12345.com.example.bench"
        let clientDataHash = SHA256.hash(Array("bench challenge".utf8))
        let assertion = try device.assert(clientDataHash: clientDataHash, appID: appID)
        let point = device.publicKey
        let parsedOnce = try ECPublicKey(x962Point: point)
        func verify() throws -> VerifiedAssertion {
            let key = parseKeyEachTime ? try ECPublicKey(x962Point: point) : parsedOnce
            return try AssertionVerifier.verify(assertion: assertion[...], clientDataHash: clientDataHash,
                                                publicKey: key, appID: appID, previousCounter: 0)
        }
        _ = try verify()
        let raw = try RawECDSAVerifier(curve: .p256)
        let (rate, rawRate, ratio) = Throughput.compare(seconds: seconds, { _ = try? verify() },
                                                        { _ = raw.verifyOnce() })
        let name = parseKeyEachTime
            ? "assertion, key loaded from its point each time" : "assertion (software device, key parsed once)"
        return Result(name: name, rate: rate, rawCurve: "P-256", rawRate: rawRate, ratio: ratio)
    }
}
