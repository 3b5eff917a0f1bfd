@testable import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
import AttestTesting
import Testing

/// The key ring as files: rotation, algorithms, and an index written before key lifecycles.
@Suite struct KeyRingTests {
    static func served(_ f: Fixture) throws -> [String] {
        let jwks = try JSONParser.parse(try #require(try FileIO.read(f.data.jwksFile)))
        return jwks["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } ?? []
    }

    @Test func rotationPublishesTheNewKeyAtOnceAndKeepsThePreviousOneForTheOverlap() throws {
        let f = try Fixture()
        let ring = f.context.keyRing
        let first = try #require(ring.entries.first)
        let t0 = f.clock.now()
        let second = try ring.rotate(algorithm: "ES256", now: t0, publicationDelay: 600, overlap: 3600)
        #expect(try Self.served(f) == [second.kid, first.kid], "jwks.json lists the new key before it signs")
        #expect(try ring.signer(at: t0 + 599).keyID == first.kid)
        #expect(try ring.signer(at: t0 + 600).keyID == second.kid)
        #expect(Set(ring.publishedEntries(at: t0 + 600 + 3599).map(\.kid)) == [first.kid, second.kid])
        #expect(ring.publishedEntries(at: t0 + 600 + 3600).map(\.kid) == [second.kid])
    }

    @Test func rs256KeysPublishModulusAndExponent() throws {
        let f = try Fixture()
        let entry = try f.context.keyRing.rotate(algorithm: "RS256", now: f.clock.now(), publicationDelay: 0,
                                                 overlap: 0)
        #expect(entry.algorithm == "RS256")
        let jwks = try JSONParser.parse(try #require(try FileIO.read(f.data.jwksFile)))
        let key = try #require(jwks["keys"]?.arrayValue?.first)
        #expect(key["kty"]?.stringValue == "RSA" && key["e"]?.stringValue == "AQAB")
        #expect((Base64.decode(key["n"]?.stringValue ?? "")?.count ?? 0) == 256)
    }

    @Test func anIndexWrittenBeforeLifecyclesReadsAsActiveAndRetiringKeys() throws {
        let f = try Fixture()
        let old = try #require(f.context.keyRing.entries.first)
        let newer = try SigningKey.generate(.p256)
        let newerKid = try JWK.thumbprint(of: newer)
        try FileIO.writeAtomically(f.data.keysDirectory + "/newer.pem", text: newer.pemEncoded, mode: 0o600)
        let t0 = f.clock.now()
        try FileIO.writeAtomically(f.data.keysDirectory + "/index.json", text: """
            {"keys": [{"kid": "\(newerKid)", "algorithm": "ES256", "file": "newer.pem", \
            "createdAt": "\((t0 + 10).iso8601)", "retiresAt": null},
                      {"kid": "\(old.kid)", "algorithm": "ES256", "file": "\(old.file)", \
            "createdAt": "\(old.publishAt.iso8601)", "retiresAt": "\((t0 + 100).iso8601)"}]}
            """, mode: 0o600)
        let ring = try KeyRing(f.data)
        #expect(ring.entries.map { $0.state(at: t0 + 20) } == [.active, .retired],
                "the newer key signs, the older one verifies")
        #expect(ring.entries.map { $0.state(at: t0 + 100) } == [.active, .withdrawn],
                "the older one leaves at its retiresAt")
        #expect(ring.entries.allSatisfy { $0.jwk?["kid"]?.stringValue == $0.kid },
                "public JWKs derived from the private keys")
        #expect(try ring.signer(at: t0 + 20).keyID == newerKid)
    }
}
