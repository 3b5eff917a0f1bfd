import COpenSSL
import Synchronization

/// An RSA public key held by OpenSSL, for checking RS256 tokens (RSASSA-PKCS1-v1_5 with
/// SHA-256) against a published JWK.
public final class RSAPublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    private let verifyContext = Mutex<OpaquePointer?>(nil)

    /// From the big-endian modulus and public exponent (a JWK's `n` and `e`); at least 2048 bits.
    public init(modulus n: [UInt8], exponent e: [UInt8]) throws(AttestError) {
        let bits = n.drop(while: { $0 == 0 }).count * 8
        guard bits >= 2048, bits <= 8192, !e.isEmpty, e.count <= 8 else {
            throw AttestError(.publicKeyInvalid,
                              "an RSA key of 2048 to 8192 bits with a small exponent, got \(bits) bits")
        }
        guard let key = attest_rsa_public_key(n, n.count, e, e.count) else {
            throw AttestError.openSSL(.publicKeyInvalid, "not an RSA public key")
        }
        pkey = key
    }

    deinit {
        verifyContext.withLock { if let ctx = $0 { EVP_PKEY_CTX_free(ctx) } }
        EVP_PKEY_free(pkey)
    }

    /// Checks a PKCS #1 v1.5 signature with SHA-256 over `message`.
    public func isValidSignature<S: Collection, M: Collection>(_ signature: S, message: M) -> Bool
    where S.Element == UInt8, M.Element == UInt8 {
        let sig = Array(signature)
        let digest = SHA256.hash(message)
        return verifyContext.withLock { slot -> Bool in
            if slot == nil {
                guard let ctx = EVP_PKEY_CTX_new(pkey, nil), EVP_PKEY_verify_init(ctx) == 1,
                      EVP_PKEY_CTX_set_signature_md(ctx, SHA256.md) == 1 else { return false }
                slot = ctx
            }
            let ok = EVP_PKEY_verify(slot, sig, sig.count, digest, digest.count) == 1
            if !ok { clearOpenSSLErrors() }
            return ok
        }
    }
}
