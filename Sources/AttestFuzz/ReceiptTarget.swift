import AttestCore
import AttestTesting

/// `ReceiptVerifier.verify` on the input: BER through OpenSSL's CMS parser, the chain, the
/// signature and the lenient payload reader. The verifier has verified Apple's sample once, so
/// inputs close to it also take the cached-signer path (`BER`). Properties: a refusal is a
/// receipt code; an accepted input has a non-empty App ID and an expiry after its creation.
enum ReceiptTarget {
    static func make() -> FuzzTarget {
        let verifier = setUp("receipt verifier") { try ReceiptVerifier.apple() }
        let sample = setUp("Apple's sample") {
            try AttestationObject(cborEncoded: AppleSample.attestationObject[...]).receipt
        }
        _ = setUp("the sample verifies") { try verifier.verify(sample, at: AppleSample.verifyAt) }
        return FuzzTarget(name: "receipt", summary: "ReceiptVerifier.verify: CMS, chain, signature, payload") { input in
            do throws(AttestError) {
                let receipt = try verifier.verify(input, at: AppleSample.verifyAt)
                expect(!receipt.appID.isEmpty, "an accepted receipt without an App ID")
            } catch {
                expect(error.code.rawValue.hasPrefix("receipt_") || error.code == .crypto,
                       "receipt error code \(error.code)")
            }
        }
    }
}
