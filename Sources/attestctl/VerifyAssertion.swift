import AttestCore

/// The assertion steps as `attestctl verify` lists them, each with the codes meaning it failed.
let assertionSteps: [VerifyReport.Step] = [
    .init(label: "1", name: "format (signature, authenticatorData)", codes: [.assertionFormat]),
    .init(label: "2", name: "signature over SHA-256(authenticatorData || clientDataHash)", codes: [.signature]),
    .init(label: "3", name: "rpIdHash = SHA-256(App ID)", codes: [.rpIDHash]),
    .init(label: "4", name: "counter > previousCounter", codes: [.counter]),
]

/// Verifies an assertion input; throws `CommandFailure` (`input`) only for unusable input.
func verifyAssertion(_ input: VerifyInput) throws(CommandFailure) -> VerifyReport {
    let assertion = try input.bytes(input.assertion, "assertion")
    let clientDataHash = try input.bytes(input.clientDataHash, "clientDataHash")
    let key = try input.key()
    let appID = try input.appID()
    let previousCounter = try input.counter()
    do {
        let result = try AssertionVerifier.verify(assertion: assertion[...], clientDataHash: clientDataHash,
                                                  publicKey: key, appID: appID, previousCounter: previousCounter)
        var report = VerifyReport(kind: "assertion", steps: assertionSteps, error: nil)
        report.counter = result.counter
        return report
    } catch {
        return VerifyReport(kind: "assertion", steps: assertionSteps, error: error)
    }
}
