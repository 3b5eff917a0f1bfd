/// Signs JSON Web Tokens (RFC 7519) with ES256 or RS256.
///
/// ```
/// token = base64url(header) "." base64url(claims) "." base64url(signature)
/// header = {"alg": "ES256" | "RS256", "typ": "JWT", "kid": <RFC 7638 thumbprint>}
/// ES256 signature = r ‖ s (32 bytes each, RFC 7518 §3.4); RS256 = RSASSA-PKCS1-v1_5 SHA-256
/// ```
public struct JWTSigner: Sendable {
    public let key: SigningKey
    public let keyID: String
    private let encodedHeader: String

    public init(key: SigningKey) throws(AttestError) {
        guard key.kind != .p384 else { throw AttestError(.keyInvalid, "token keys are P-256 (ES256) or RSA (RS256)") }
        self.key = key
        keyID = try JWK.thumbprint(of: key)
        let header: JSONValue = ["alg": .string(key.jwtAlgorithm), "typ": "JWT", "kid": .string(keyID)]
        encodedHeader = Base64.encode(header.jsonBytes, url: true)
    }

    /// The compact serialisation of a token carrying `claims`.
    public func sign(_ claims: JSONValue) throws(AttestError) -> String {
        let signingInput = encodedHeader + "." + Base64.encode(claims.jsonBytes, url: true)
        var signature = try key.sign(signingInput.utf8)
        if key.kind == .p256 { signature = try ECDSASignature.raw(fromDER: signature, width: 32) }
        return signingInput + "." + Base64.encode(signature, url: true)
    }
}

extension SigningKey {
    /// The JWS `alg` this key signs with.
    public var jwtAlgorithm: String { kind == .rsa2048 ? "RS256" : kind == .p384 ? "ES384" : "ES256" }
}
