import AttestCore

/// Apple's nine steps as `attestctl verify` lists them, each with the codes meaning it failed.
let attestationSteps: [VerifyReport.Step] = [
    .init(label: "1", name: "format (fmt, x5c, receipt, authData)",
          codes: [.format, .cborMalformed, .cborLimitExceeded, .authenticatorDataMalformed]),
    .init(label: "2", name: "certificate chain to the trust anchor", codes: [.certificateChain, .derMalformed]),
    .init(label: "3-4", name: "nonce = SHA-256(authData || clientDataHash)", codes: [.nonce]),
    .init(label: "5", name: "keyId = SHA-256(credential public key)", codes: [.keyID, .publicKeyInvalid]),
    .init(label: "6", name: "rpIdHash = SHA-256(App ID)", codes: [.rpIDHash]),
    .init(label: "7", name: "counter = 0", codes: [.counter]),
    .init(label: "8", name: "aaguid allowed by environment", codes: [.environment]),
    .init(label: "9", name: "credentialId = keyId", codes: [.credentialID]),
]

/// Verifies an attestation input; throws `CommandFailure` (`input`) only for unusable input.
func verifyAttestation(_ input: VerifyInput, at time: Timestamp,
                       anchors: ChainVerifier) throws(CommandFailure) -> VerifyReport {
    let object = try input.bytes(input.attestationObject, "attestationObject")
    let keyID = try input.bytes(input.keyId, "keyId")
    let clientDataHash = try input.bytes(input.clientDataHash, "clientDataHash")
    let appID = try input.appID()
    let policy = try input.policy()
    do {
        let result = try AttestationVerifier(chainVerifier: anchors).verify(
            attestationObject: object[...], keyID: keyID, clientDataHash: clientDataHash, appID: appID, policy: policy,
            at: time)
        var report = VerifyReport(kind: "attestation", steps: attestationSteps, error: nil)
        report.environment = result.environment.rawValue
        report.publicKey = Base64.encode(result.publicKey)
        report.keyId = Base64.encode(keyID)
        report.signCount = result.signCount
        report.receiptLength = result.receipt.count
        report.validationCategory = result.validationCategory
        report.bundleVersion = result.bundleVersion
        return report
    } catch {
        return VerifyReport(kind: "attestation", steps: attestationSteps, error: error)
    }
}
