@testable import AttestCore
import Synchronization
import Testing

/// ES256 with prepared nonces: the arithmetic against RFC 6979's published P-256 vectors,
/// fresh signatures against OpenSSL's verifier, the reserve, and what a fork does to it.
@Suite struct PreparedES256SignerTests {
    /// RFC 6979 A.2.5: the P-256 key, with SHA-256 (checked again with python-ecdsa 0.19,
    /// whose RFC 6979 nonce and whose signature with that nonce both give these values).
    static let rfcKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEBMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgya+p2EW6dRZrXCFXZ7HWk05Qw9s2
        6JsSe4piKxIPZyGhRANCAARg/tS6JVqdMclh63TGNW1owEm4kjth+mzmaWIuYPKftnkD/hAIuLyZ
        pBrp6VYovGTy8bIMLX6fUXejwpTURiKZ
        -----END PRIVATE KEY-----
        """

    struct Vector: Sendable, CustomTestStringConvertible {
        let message: String, k: String, r: String, s: String
        var testDescription: String { "message \"\(message)\"" }
    }

    static let vectors = [
        Vector(message: "sample", k: "A6E3C57DD01ABE90086538398355DD4C3B17AA873382B0F24D6129493D8AAD60",
               r: "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
               s: "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"),
        Vector(message: "test", k: "D16B6AE827F17175E040871A1C7EC3500192C4C92677336EC2537ACAEE0008E0",
               r: "F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367",
               s: "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"),
    ]

    @Test(arguments: vectors)
    func matchesRFC6979(_ v: Vector) throws {
        let signer = try PreparedES256Signer(key: try SigningKey(pemEncoded: Self.rfcKey))
        let signature = try signer.sign(digest: SHA256.hash(v.message.utf8), nonce: Vectors.hex(v.k))
        #expect(Hex.encode(Array(signature.prefix(32))) == v.r.lowercased(), "r")
        #expect(Hex.encode(Array(signature.suffix(32))) == v.s.lowercased(), "s (a leading zero byte kept: width 32)")
    }

    @Test func freshSignaturesVerifyAndNeverRepeatANonce() throws {
        let key = try SigningKey.generate(.p256)
        let signer = try PreparedES256Signer(key: key)
        let publicKey = try key.publicKey()
        var rs = Set<[UInt8]>()
        for i in 0..<300 {
            let digest = SHA256.hash("message \(i)".utf8)
            let signature = try signer.sign(digest: digest)
            #expect(signature.count == 64)
            #expect(publicKey.isValidSignature(try ECDSASignature.der(fromRaw: signature), digest: digest),
                    "signature \(i) verifies")
            rs.insert(Array(signature.prefix(32)))
        }
        #expect(rs.count == 300, "a nonce (hence r) is used once")
        let digest = SHA256.hash("tampered".utf8)
        let signature = try signer.sign(digest: digest)
        #expect(!publicKey.isValidSignature(try ECDSASignature.der(fromRaw: signature),
                                            digest: SHA256.hash("other".utf8)))
    }

    @Test func signsFromTheReserveAndPreparesAStepWhenEmpty() throws {
        let signer = try PreparedES256Signer(key: try SigningKey.generate(.p256))
        let step = PreparedES256Signer.step
        #expect(signer.prepared == 0, "nothing prepared before the first signature")
        _ = try signer.sign(digest: SHA256.hash([1]))
        #expect(signer.prepared == step - 1, "the first signature prepared a step and used one")
        try signer.prepare(upTo: 20)
        #expect(signer.prepared == 20)
        for _ in 0..<20 { _ = try signer.sign(digest: SHA256.hash([2])) }
        #expect(signer.prepared == 0)
        _ = try signer.sign(digest: SHA256.hash([3]))
        #expect(signer.prepared == step - 1)
    }

    @Test func quietMomentsPrepareWholeStepsUpToTheCapacity() throws {
        let step = PreparedES256Signer.step
        let signer = try PreparedES256Signer(key: try SigningKey.generate(.p256), capacity: 3 * step)
        #expect(signer.prepareAhead(), "below capacity after one step")
        #expect(signer.prepared == step)
        #expect(signer.prepareAhead())
        #expect(!signer.prepareAhead(), "the third step reaches the capacity")
        #expect(signer.prepared == 3 * step)
        #expect(!signer.prepareAhead(), "nothing more to do")
        for used in 1..<step {
            _ = try signer.sign(digest: SHA256.hash([UInt8(used)]))
            #expect(!signer.prepareAhead() && signer.prepared == 3 * step - used,
                    "less than a step used: nothing prepared")
        }
        _ = try signer.sign(digest: SHA256.hash([0]))
        #expect(!signer.prepareAhead(), "a whole step used: one step prepared, full again")
        #expect(signer.prepared == 3 * step)
    }

    @Test func aForkedChildDiscardsTheReserveItInherited() throws {
        let pid = Mutex<Int32>(100)
        let key = try SigningKey.generate(.p256)
        let signer = try PreparedES256Signer(key: key, processID: { pid.withLock { $0 } })
        try signer.prepare(upTo: 10)
        #expect(signer.prepared == 10)
        pid.withLock { $0 = 101 }
        #expect(signer.prepared == 0, "the parent's nonces are not this process's")
        let digest = SHA256.hash("child".utf8)
        let signature = try signer.sign(digest: digest)
        #expect(signer.prepared == PreparedES256Signer.step - 1, "the child prepared its own step and used one")
        #expect(try key.publicKey().isValidSignature(try ECDSASignature.der(fromRaw: signature), digest: digest))
    }

    @Test func refusesAnythingButP256AndADigestOfAnotherSize() throws {
        #expect(throws: AttestError.self) { try PreparedES256Signer(key: try SigningKey.generate(.p384)) }
        let signer = try PreparedES256Signer(key: try SigningKey.generate(.p256))
        #expect(throws: AttestError.self) { try signer.sign(digest: [UInt8](repeating: 1, count: 31)) }
    }
}
