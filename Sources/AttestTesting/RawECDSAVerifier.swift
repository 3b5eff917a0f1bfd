import AttestCore
import COpenSSL

/// The fastest honest OpenSSL ECDSA verification: a public key parsed once, one
/// `EVP_PKEY_CTX` prepared once, and `EVP_PKEY_verify` on a precomputed 32-byte digest.
///
/// It is the benchmark's baseline: attestation verification costs one P-384 verify (Apple's
/// intermediate signs the credential certificate with ecdsa-with-SHA256), assertion
/// verification one P-256 verify, so a verifier's rate divided by this one is the share of
/// time spent in the signature check rather than in parsing and bookkeeping.
public final class RawECDSAVerifier: @unchecked Sendable {
    public enum Curve: String, Sendable, CaseIterable {
        case p256 = "P-256", p384 = "P-384"
    }

    public let curve: Curve
    private let pkey: OpaquePointer
    private let context: OpaquePointer
    private let digest: [UInt8]
    private let signature: [UInt8]

    /// A fresh key, a random digest and its signature, and the prepared verify context.
    public init(curve: Curve) throws(AttestError) {
        self.curve = curve
        let key = try SigningKey.generate(curve == .p256 ? .p256 : .p384)
        digest = SystemRandom().bytes(32)
        signature = try DigestSigner(key).sign(digest: digest)
        let spki = key.subjectPublicKeyInfo
        let parsed: OpaquePointer? = spki.withUnsafeBufferPointer { buf in
            var cursor = buf.baseAddress
            return d2i_PUBKEY(nil, &cursor, buf.count)
        }
        guard let parsed else { throw AttestError(.crypto, "d2i_PUBKEY") }
        guard let ctx = EVP_PKEY_CTX_new(parsed, nil), EVP_PKEY_verify_init(ctx) == 1 else {
            EVP_PKEY_free(parsed)
            throw AttestError(.crypto, "EVP_PKEY_verify_init")
        }
        pkey = parsed
        context = ctx
        guard verifyOnce() else { throw AttestError(.crypto, "the baseline signature does not verify") }
    }

    deinit {
        EVP_PKEY_CTX_free(context)
        EVP_PKEY_free(pkey)
    }

    /// One verification of the prepared signature; `true` unless OpenSSL misbehaves.
    @inline(never)
    public func verifyOnce() -> Bool {
        EVP_PKEY_verify(context, signature, signature.count, digest, digest.count) == 1
    }
}
