/// Reading compact JWTs: enough for tests, `attestctl` and the heartbeat's token check.
public struct JWT: Sendable {
    public let header: JSONValue
    public let claims: JSONValue
    public let signingInput: String
    public let signature: [UInt8]

    /// Splits and decodes a compact token; does not check the signature.
    public init(compact token: String) throws(AttestError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let h = Base64.decode(String(parts[0])), let c = Base64.decode(String(parts[1])),
              let s = Base64.decode(String(parts[2])) else {
            throw AttestError(.jsonMalformed, "not a compact JWT")
        }
        header = try JSONParser.parse(h)
        claims = try JSONParser.parse(c)
        signingInput = parts[0] + "." + parts[1]
        signature = s
    }

    /// Checks an ES256 signature with `key`.
    public func hasValidES256Signature(_ key: ECPublicKey) -> Bool {
        guard header["alg"]?.stringValue == "ES256", signature.count == 64,
              let der = try? ECDSASignature.der(fromRaw: signature) else { return false }
        return key.isValidSignature(der, message: signingInput.utf8)
    }
}
