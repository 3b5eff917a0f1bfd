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
    /// ES256 with nonces prepared ahead (`PreparedES256Signer`); `nil` for RS256.
    private let prepared: PreparedES256Signer?

    public init(key: SigningKey) throws(AttestError) {
        guard key.kind != .p384 else { throw AttestError(.keyInvalid, "token keys are P-256 (ES256) or RSA (RS256)") }
        self.key = key
        keyID = try JWK.thumbprint(of: key)
        let header: JSONValue = ["alg": .string(key.jwtAlgorithm), "typ": "JWT", "kid": .string(keyID)]
        encodedHeader = Base64.encode(header.jsonBytes, url: true)
        prepared = key.kind == .p256 ? try PreparedES256Signer(key: key) : nil
    }

    /// A signer whose header is exactly `{"alg": "ES256", "kid": keyID}` (no `typ`, the kid
    /// given, not a thumbprint): the provider tokens Apple's DeviceCheck and APNs accept.
    public init(key: SigningKey, providerKeyID: String) throws(AttestError) {
        guard key.kind == .p256 else { throw AttestError(.keyInvalid, "provider tokens are ES256: a P-256 key") }
        self.key = key
        keyID = providerKeyID
        let header: JSONValue = ["alg": "ES256", "kid": .string(providerKeyID)]
        encodedHeader = Base64.encode(header.jsonBytes, url: true)
        prepared = try PreparedES256Signer(key: key)
    }

    /// One step of signature preparation for a quiet moment (`PreparedES256Signer.prepareAhead`);
    /// returns whether more would help (never for RS256).
    public func prepareAhead() -> Bool { prepared?.prepareAhead() ?? false }

    /// The compact serialisation of a token carrying `claims`.
    public func sign(_ claims: JSONValue) throws(AttestError) -> String {
        let signingInput = encodedHeader + "." + Base64.encode(claims.jsonBytes, url: true)
        let signature: [UInt8]
        if let prepared {
            signature = try prepared.sign(digest: SHA256.hash(signingInput.utf8))
        } else {
            signature = try key.sign(signingInput.utf8)
        }
        return signingInput + "." + Base64.encode(signature, url: true)
    }
}

extension SigningKey {
    /// The JWS `alg` this key signs with.
    public var jwtAlgorithm: String { kind == .rsa2048 ? "RS256" : kind == .p384 ? "ES384" : "ES256" }
}
