import AttestCore
import AttestTesting
import Testing

/// Flipped, truncated and extended bytes of Apple's sample and of synthetic assertions: the
/// verifiers must never crash and never accept what was not signed.
///
/// What "never a success" means. Every byte of an assertion is covered by its signature or is
/// CBOR structure, so no mutation of an assertion may verify. An attestation object has one
/// region no signature covers: the content of `attStmt.receipt`. The verifier passes the
/// receipt through as opaque bytes (Apple signs it separately, and checks that signature itself
/// when the receipt is later exchanged for a fraud-metric receipt). A same-length change inside
/// the receipt's content therefore verifies, and that is accepted only when (a) every changed
/// byte lies inside the receipt's content and (b) the result is the original's, field for
/// field, except that its receipt is exactly the mutated bytes. Any other success is a failure
/// of this test. Changes of length never succeed.
@Suite struct MutationTests {
    let sample: [UInt8]
    let receiptRange: Range<Int>
    let keyID: [UInt8]
    let clientDataHash: [UInt8]
    let appID: String
    let time: Timestamp
    let verifier: AttestationVerifier
    let original: VerifiedAttestation

    init() throws {
        let vector = try AppleGuideVector.load()
        sample = Vectors.bytes(vector.attestationObject_b64)
        let receipt = try AttestationObject(cborEncoded: sample[...]).receipt
        receiptRange = receipt.startIndex..<receipt.endIndex
        keyID = Vectors.bytes(vector.keyId_b64)
        clientDataHash = Vectors.bytes(vector.clientDataHash_b64)
        appID = vector.appId
        time = try #require(Timestamp(iso8601: vector.verifyAt))
        verifier = AttestationVerifier(chainVerifier: try .apple())
        original = try verifier.verify(attestationObject: sample[...], keyID: keyID, clientDataHash: clientDataHash,
                                       appID: appID, policy: .both, at: time)
    }

    /// The outcome of verifying a mutated sample.
    enum Outcome: Equatable {
        case rejected
        /// Verified, and only the unsigned receipt changed, carried through exactly.
        case receiptPassedThrough
        /// Verified otherwise: the failure this test exists to catch.
        case acceptedUnsigned(String)
    }

    func outcome(_ mutated: [UInt8], changed: [Int]) -> Outcome {
        let result: VerifiedAttestation
        do {
            result = try verifier.verify(attestationObject: mutated[...], keyID: keyID, clientDataHash: clientDataHash,
                                         appID: appID, policy: .both, at: time)
        } catch {
            return .rejected
        }
        let sameLength = mutated.count == sample.count
        let insideReceipt = sameLength && changed.allSatisfy(receiptRange.contains)
        let passedThrough = result.receipt == Array(mutated[receiptRange]) && result.publicKey == original.publicKey
            && result.environment == original.environment && result.signCount == original.signCount
            && result.nonce == original.nonce && result.validationCategory == original.validationCategory
            && result.bundleVersion == original.bundleVersion
        return insideReceipt && passedThrough
            ? .receiptPassedThrough : .acceptedUnsigned("changed \(changed.prefix(4)) of \(mutated.count) bytes")
    }

    @Test func everyByteOutsideTheReceiptIsCovered() {
        var rng = SeededRandom(seed: 0xA77E_57ED)
        var checked = 0
        for i in sample.indices where !receiptRange.contains(i) {
            var mutated = sample
            mutated[i] ^= UInt8.random(in: 1...255, using: &rng)
            #expect(outcome(mutated, changed: [i]) == .rejected,
                    "byte \(i) of the Apple sample, XORed: must not verify")
            checked += 1
        }
        #expect(checked == sample.count - receiptRange.count, "every byte but the receipt's content was changed once")
    }

    @Test func randomFlipsNeverVerifyOutsideTheReceipt() {
        var rng = SeededRandom(seed: 2026_04_21)
        var passedThrough = 0
        for iteration in 0..<2_000 {
            var mutated = sample
            let positions = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
                Int.random(in: 0..<sample.count, using: &rng)
            }
            for p in positions { mutated[p] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng) }
            let changed = mutated.indices.filter { mutated[$0] != sample[$0] }
            switch outcome(mutated, changed: changed) {
            case .rejected: break
            case .receiptPassedThrough: passedThrough += 1
            case .acceptedUnsigned(let what):
                Issue.record("iteration \(iteration): a mutation outside the receipt verified (\(what))")
            }
        }
        // The receipt is most of the object, so many flips land there; they must be the only successes.
        #expect(passedThrough > 0, "flips inside the unsigned receipt verify and hand back the flipped receipt")
    }

    @Test func everyTruncationFails() {
        for length in 0..<sample.count {
            #expect(outcome(Array(sample.prefix(length)), changed: []) == .rejected,
                    "the sample cut to \(length) bytes")
        }
    }

    @Test func extensionsAndInsertionsFail() {
        var rng = SeededRandom(seed: 7)
        for iteration in 0..<1_000 {
            let extra = rng.bytes(Int.random(in: 1...8, using: &rng))
            let mutated: [UInt8]
            if iteration % 2 == 0 {
                mutated = sample + extra
            } else {
                let at = Int.random(in: 0...sample.count, using: &rng)
                mutated = Array(sample[..<at]) + extra + Array(sample[at...])
            }
            #expect(outcome(mutated, changed: []) == .rejected, "iteration \(iteration): \(extra.count) bytes added")
        }
    }

    // MARK: Assertions.

    struct AssertionCase {
        let bytes: [UInt8]
        let key: ECPublicKey

        init() throws {
            let device = try SoftwareDevice.generate()
            bytes = try device.assertion(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID, counter: 9)
            key = try ECPublicKey(x962Point: device.publicKey)
        }

        func verifies(_ mutated: [UInt8]) -> Bool {
            (try? AssertionVerifier.verify(assertion: mutated[...], clientDataHash: Fixtures.clientDataHash,
                                           publicKey: key, appID: Fixtures.appID, previousCounter: 8)) != nil
        }
    }

    @Test func everyBitOfAnAssertionIsCovered() throws {
        let a = try AssertionCase()
        #expect(a.verifies(a.bytes), "the unmutated assertion verifies")
        for i in a.bytes.indices {
            for bit in 0..<8 {
                var mutated = a.bytes
                mutated[i] ^= UInt8(1) << UInt8(bit)
                #expect(!a.verifies(mutated), "bit \(bit) of byte \(i) of the assertion, flipped: must not verify")
            }
        }
    }

    @Test func randomAssertionMutationsNeverVerify() throws {
        let a = try AssertionCase()
        var rng = SeededRandom(seed: 0x5EED)
        for iteration in 0..<3_000 {
            var mutated = a.bytes
            switch iteration % 3 {
            case 0:
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    mutated[Int.random(in: 0..<mutated.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                }
            case 1:
                mutated = Array(mutated.prefix(Int.random(in: 0..<mutated.count, using: &rng)))
            default:
                let at = Int.random(in: 0...mutated.count, using: &rng)
                mutated.insert(contentsOf: rng.bytes(Int.random(in: 1...8, using: &rng)), at: at)
            }
            #expect(!a.verifies(mutated),
                    "iteration \(iteration) (\(["flips", "truncation", "insertion"][iteration % 3])) must not verify")
        }
    }
}
