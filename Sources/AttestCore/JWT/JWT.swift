/// Reading compact JWTs: enough for tests, `attestctl` and the heartbeat's token check.
public struct JWT: Sendable {
    public let header: JSONValue
    public let claims: JSONValue
    public let signingInput: String
    public let signature: [UInt8]

    /// Splits and decodes a compact token; does not check the signature.
    ///
    /// Works on the token's UTF-8 bytes: splitting the `String` by `Character` walked grapheme
    /// boundaries and cost ~370k instructions for a 900-byte token, a quarter of a heartbeat.
    public init(compact token: String) throws(AttestError) {
        var token = token
        let parsed = token.withUTF8 { bytes -> (header: [UInt8], claims: [UInt8], signature: [UInt8], input: String)? in
            let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
            guard dots.count == 2 else { return nil }
            func part(_ range: Range<Int>) -> [UInt8]? {
                Base64.decode(utf8: UnsafeBufferPointer(rebasing: bytes[range]))
            }
            guard let h = part(0..<dots[0]), let c = part((dots[0] + 1)..<dots[1]),
                  let s = part((dots[1] + 1)..<bytes.count) else {
                return nil
            }
            return (h, c, s, String(decoding: UnsafeBufferPointer(rebasing: bytes[0..<dots[1]]), as: UTF8.self))
        }
        guard let parsed else { throw AttestError(.jsonMalformed, "not a compact JWT") }
        header = try JSONParser.parse(parsed.header)
        claims = try JSONParser.parse(parsed.claims)
        signingInput = parsed.input
        signature = parsed.signature
    }

    /// Checks an ES256 signature with `key`.
    public func hasValidES256Signature(_ key: ECPublicKey) -> Bool {
        guard header["alg"]?.stringValue == "ES256", signature.count == 64,
              let der = try? ECDSASignature.der(fromRaw: signature) else { return false }
        return key.isValidSignature(der, message: signingInput.utf8)
    }
}
