import AttestCore
import AttestTesting
import Testing

/// `AttestTesting.AppleSample` is the guide vector, value for value.
@Suite struct AppleSampleTests {
    @Test func sampleMatchesTheVectorFile() throws {
        let vector = try AppleGuideVector.load()
        #expect(AppleSample.attestationObject == Vectors.bytes(vector.attestationObject_b64), "the attestation object")
        #expect(AppleSample.keyID == Vectors.bytes(vector.keyId_b64), "the keyId")
        #expect(AppleSample.clientDataHash == Vectors.bytes(vector.clientDataHash_b64),
                "the clientDataHash (raw challenge bytes)")
        #expect(AppleSample.appID == vector.appId && AppleSample.teamID == vector.teamId
                    && AppleSample.bundleID == vector.bundleId,
                "the App ID and its parts")
        #expect(AppleSample.verifyAt.iso8601 == vector.verifyAt, "the verification time")
    }

    @Test func sampleVerifies() throws {
        let result = try AttestationVerifier(chainVerifier: .apple()).verify(
            attestationObject: AppleSample.attestationObject[...], keyID: AppleSample.keyID,
            clientDataHash: AppleSample.clientDataHash, appID: AppleSample.appID, policy: .production,
            at: AppleSample.verifyAt)
        #expect(result.environment == .production, "a production key")
    }
}
