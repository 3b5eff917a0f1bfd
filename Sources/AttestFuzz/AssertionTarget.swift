import AttestCore
import AttestTesting

/// The assertion verifier against the fuzz device's stored key, App ID and a stored counter
/// of 1: the input is the assertion CBOR.
///
/// Properties: a refusal is one of the assertion codes; an acceptance raises the counter.
enum AssertionTarget {
    static let previousCounter: UInt32 = 1
    static let refusals: Set<AttestError.Code> = [.assertionFormat, .signature, .rpIDHash, .counter]

    static func make() -> FuzzTarget {
        let key = setUp("device key") { try FuzzKeys.device.publicKey() }
        return FuzzTarget(name: "assertion",
                          summary: "AssertionVerifier.verify with a stored key and counter") { input in
            do throws(AttestError) {
                let verified = try AssertionVerifier.verify(assertion: input, clientDataHash: FuzzKeys.clientDataHash,
                                                            publicKey: key, appID: FuzzService.appID,
                                                            previousCounter: previousCounter)
                expect(verified.counter > previousCounter, "accepted counter \(verified.counter)")
            } catch {
                expect(refusals.contains(error.code), "assertion error code \(error.code): \(error.reason)")
            }
        }
    }
}
