import AttestCore
import AttestTesting

/// The attestation verifier, all nine steps. The first input byte picks the setting (bit 0:
/// Apple's 2026 guide sample — Apple's root, its App ID, keyId, clientDataHash and capture
/// time — or the fuzz test PKI and device; bit 1: policy `both` instead of `production`);
/// the rest is the attestation object.
///
/// Properties: a refusal is one of the steps' codes (or a CBOR error); an acceptance carries
/// the certified P-256 point whose SHA-256 is the keyId, in an environment the policy allows.
enum AttestationTarget {
    struct Setting {
        let verifier: AttestationVerifier
        let keyID: [UInt8]
        let clientDataHash: [UInt8]
        let appID: String
        let time: Timestamp
    }

    static let refusals: Set<AttestError.Code> = [.cborMalformed, .cborLimitExceeded, .format, .certificateChain,
                                                  .nonce, .keyID, .rpIDHash, .counter, .environment, .credentialID]

    static func make() -> FuzzTarget {
        let apple = setUp("Apple setting") {
            Setting(verifier: AttestationVerifier(chainVerifier: try ChainVerifier.apple()), keyID: AppleSample.keyID,
                    clientDataHash: AppleSample.clientDataHash, appID: AppleSample.appID, time: AppleSample.verifyAt)
        }
        let synthetic = setUp("test PKI setting") {
            Setting(verifier: AttestationVerifier(chainVerifier: try FuzzKeys.pki.chainVerifier()),
                    keyID: SHA256.hash(FuzzKeys.device.x962Point), clientDataHash: FuzzKeys.clientDataHash,
                    appID: FuzzService.appID, time: FuzzKeys.verifyAt)
        }
        return FuzzTarget(name: "attestation",
                          summary: "AttestationVerifier.verify (Apple sample and test PKI settings)") { input in
            guard let selector = input.first else { return }
            let setting = selector & 1 == 0 ? apple : synthetic
            let policy: EnvironmentPolicy = selector & 2 == 0 ? .production : .both
            do throws(AttestError) {
                let verified = try setting.verifier.verify(attestationObject: input.dropFirst(), keyID: setting.keyID,
                                                           clientDataHash: setting.clientDataHash, appID: setting.appID,
                                                           policy: policy, at: setting.time)
                expect(verified.publicKey.count == 65 && verified.publicKey.first == 4,
                       "accepted key is not an uncompressed point")
                expect(SHA256.hash(verified.publicKey) == setting.keyID, "accepted key does not hash to keyId")
                expect(policy.allows(verified.environment), "accepted an environment the policy refuses")
                expect(verified.signCount == 0, "accepted a non-zero counter")
            } catch {
                expect(refusals.contains(error.code), "attestation error code \(error.code): \(error.reason)")
            }
        }
    }
}
