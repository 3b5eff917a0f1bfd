/// Checks compact JWTs against a JWKS document (RFC 7517): the header's `kid` names a key of
/// the set and its `alg` must be that key's (`ES256` with an EC P-256 key, `RS256` with an
/// RSA key). Claims (`exp`, `aud`, …) are the caller's to judge.
public struct JWKSVerifier: Sendable {
    enum Key: Sendable {
        case es256(ECPublicKey)
        case rs256(RSAPublicKey)
    }

    let keys: [String: Key]

    /// The usable keys of `jwks`; members that are not ES256 or RS256 signing keys are skipped.
    public init(jwks: JSONValue) {
        var keys = [String: Key]()
        for jwk in jwks["keys"]?.arrayValue ?? [] {
            guard let kid = jwk["kid"]?.stringValue, let kty = jwk["kty"]?.stringValue else { continue }
            if kty == "EC", jwk["crv"]?.stringValue == "P-256",
               let x = jwk["x"]?.stringValue.flatMap({ Base64.decode($0) }),
               let y = jwk["y"]?.stringValue.flatMap({ Base64.decode($0) }),
               x.count == 32, y.count == 32, let key = try? ECPublicKey(x962Point: [4] + x + y) {
                keys[kid] = .es256(key)
            } else if kty == "RSA", let n = jwk["n"]?.stringValue.flatMap({ Base64.decode($0) }),
                      let e = jwk["e"]?.stringValue.flatMap({ Base64.decode($0) }),
                      let key = try? RSAPublicKey(modulus: n, exponent: e) {
                keys[kid] = .rs256(key)
            }
        }
        self.keys = keys
    }

    public var keyIDs: [String] { keys.keys.sorted() }

    /// The token's claims when its signature verifies with the key its `kid` names.
    /// - Throws: `.jsonMalformed` (not a JWT), `.signature` (unknown kid, algorithm mismatch
    ///   or a bad signature).
    public func verify(_ token: String) throws(AttestError) -> JSONValue {
        let jwt = try JWT(compact: token)
        guard let kid = jwt.header["kid"]?.stringValue, let key = keys[kid] else {
            throw AttestError(.signature, "the token's kid is not in the key set")
        }
        let alg = jwt.header["alg"]?.stringValue
        switch key {
        case .es256(let k):
            guard alg == "ES256", jwt.hasValidES256Signature(k) else {
                throw AttestError(.signature, "ES256 signature does not verify")
            }
        case .rs256(let k):
            guard alg == "RS256", k.isValidSignature(jwt.signature, message: jwt.signingInput.utf8) else {
                throw AttestError(.signature, "RS256 signature does not verify")
            }
        }
        return jwt.claims
    }
}
