/// Public JSON Web Keys (RFC 7517) and key sets, and RFC 7638 thumbprints used as `kid`.
///
/// ```
/// EC:  {"kty":"EC","crv":"P-256","x":b64url(x),"y":b64url(y),"use":"sig","alg":"ES256","kid":…}
/// RSA: {"kty":"RSA","n":b64url(n),"e":b64url(e),"use":"sig","alg":"RS256","kid":…}
/// JWKS: {"keys": [JWK, …]}
/// ```
public enum JWK {
    /// The thumbprint members in the order RFC 7638 requires (lexicographic).
    static func requiredMembers(of key: SigningKey) throws(AttestError) -> [(String, JSONValue)] {
        if let rsa = key.rsaComponents {
            return [("e", .string(Base64.encode(rsa.e, url: true))), ("kty", "RSA"),
                    ("n", .string(Base64.encode(rsa.n, url: true)))]
        }
        let point = key.x962Point
        guard point.count == 65 else { throw AttestError(.keyInvalid, "token EC keys are P-256") }
        return [("crv", "P-256"), ("kty", "EC"),
                ("x", .string(Base64.encode(point[1..<33], url: true))),
                ("y", .string(Base64.encode(point[33..<65], url: true)))]
    }

    /// base64url(SHA-256(canonical JWK)).
    public static func thumbprint(of key: SigningKey) throws(AttestError) -> String {
        Base64.encode(SHA256.hash(JSONValue.object(try requiredMembers(of: key)).jsonBytes), url: true)
    }

    /// The public JWK of `key`.
    public static func publicJWK(of key: SigningKey) throws(AttestError) -> JSONValue {
        var members = try requiredMembers(of: key)
        members += [("use", "sig"), ("alg", .string(key.jwtAlgorithm)), ("kid", .string(try thumbprint(of: key)))]
        return .object(members)
    }

    /// A JWKS document for `keys`, newest first.
    public static func set(_ keys: [SigningKey]) throws(AttestError) -> JSONValue {
        var list = [JSONValue]()
        for key in keys { list.append(try publicJWK(of: key)) }
        return ["keys": .array(list)]
    }
}
