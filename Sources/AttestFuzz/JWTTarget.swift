import AttestCore

/// JWT parsing (the heartbeat's bearer token): the input as a compact token, checked
/// against the fuzz signing key; and the input as a claims object, signed and read back.
///
/// Properties: a token that verifies says ES256; signed claims read back equal, with a
/// signature that verifies.
enum JWTTarget {
    static func make() -> FuzzTarget {
        let signer = setUp("signer") { try JWTSigner(key: FuzzKeys.tokenKey) }
        let key = setUp("public key") { try FuzzKeys.tokenKey.publicKey() }
        return FuzzTarget(name: "jwt", summary: "JWT(compact:) and ES256 check; sign then parse round trip") { input in
            if let token = try? JWT(compact: String(decoding: input, as: UTF8.self)),
               token.hasValidES256Signature(key) {
                expect(token.header["alg"]?.stringValue == "ES256", "a verified token is not ES256")
            }
            guard let claims = try? JSONParser.parse(Array(input)), claims.objectValue != nil else { return }
            let compact = setUp("signing") { try signer.sign(claims) }
            guard let token = try? JWT(compact: compact) else {
                fatalError("fuzz property violated: a signed token does not parse")
            }
            expect(token.claims == claims, "signed claims read back differently")
            expect(token.hasValidES256Signature(key), "a token we signed does not verify")
        }
    }
}
