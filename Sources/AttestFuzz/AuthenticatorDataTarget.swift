import AttestCore

/// Authenticator data: the fixed head, attested credential data, the COSE key and the
/// extensions map, with the Apple extension accessors.
enum AuthenticatorDataTarget {
    static func make() -> FuzzTarget {
        FuzzTarget(name: "authdata", summary: "AuthenticatorData(bytes:), COSE key, Apple extensions") { input in
            let data: AuthenticatorData
            do throws(AttestError) { data = try AuthenticatorData(bytes: input) } catch {
                expect(error.code == .authenticatorDataMalformed, "authData error code \(error.code)")
                return
            }
            expect(data.rpIDHash.count == 32, "rpIDHash is \(data.rpIDHash.count) bytes")
            expect((data.aaguid != nil) == (data.flags & AuthenticatorData.attestedCredentialDataFlag != 0),
                   "aaguid present without the AT flag, or absent with it")
            if let aaguid = data.aaguid { _ = AppAttestEnvironment(aaguid: aaguid) }
            _ = data.validationCategory
            _ = data.bundleVersion
        }
    }
}
