import AttestCore
import Testing

/// Compact JWTs as the heartbeat reads them: three base64url parts split on the two dots.
@Suite struct JWTTests {
    static let key = try! SigningKey.generate(.p256)

    static func token(_ claims: JSONValue) throws -> String { try JWTSigner(key: key).sign(claims) }

    @Test func aSignedTokenReadsBackAndVerifies() throws {
        let claims: JSONValue = ["sub": "device", "exp": .int(1_800_000_000), "name": "Zoë ✓"]
        let token = try Self.token(claims)
        let jwt = try JWT(compact: token)
        #expect(jwt.claims == claims)
        #expect(jwt.header["alg"]?.stringValue == "ES256")
        #expect(jwt.signingInput == String(token[..<token.lastIndex(of: ".")!]), "everything before the last dot")
        #expect(jwt.signature.count == 64)
        #expect(jwt.hasValidES256Signature(try ECPublicKey(subjectPublicKeyInfo: Self.key.subjectPublicKeyInfo)))
        let verifier = JWKSVerifier(jwks: try JWK.set([Self.key]))
        #expect(try verifier.verify(token) == claims)
    }

    @Test("anything but three base64url parts is refused", arguments: [
        "", ".", "..", "...", "a.b", "a.b.c.d", "e30.e30", ".e30.AA", "e30..AA",
        "e30.e30.A", "e30.e3!.AA", "e30.e30.AA.", "e30.é.AA", "e30\u{0}.e30.AA",
    ])
    func malformed(token: String) {
        #expect(throws: AttestError.self) { try JWT(compact: token) }
    }

    @Test func anEmptySignatureReadsButNeverVerifies() throws {
        let token = try Self.token(["sub": "device"])
        let unsigned = String(token[...token.lastIndex(of: ".")!])
        #expect(try JWT(compact: unsigned).signature.isEmpty)
        #expect(throws: AttestError.self) { try JWKSVerifier(jwks: try JWK.set([Self.key])).verify(unsigned) }
    }

    @Test func aChangedPartNoLongerVerifies() throws {
        let token = try Self.token(["sub": "device"])
        let verifier = JWKSVerifier(jwks: try JWK.set([Self.key]))
        let other = try Self.token(["sub": "another"])
        let spliced = token[..<token.firstIndex(of: ".")!] + "." + other.split(separator: ".")[1]
            + "." + token.split(separator: ".")[2]
        #expect(try JWT(compact: String(spliced)).claims["sub"]?.stringValue == "another",
                "the spliced token still parses")
        #expect(throws: AttestError.self) { try verifier.verify(String(spliced)) }
    }
}
