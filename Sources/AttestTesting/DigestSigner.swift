import AttestCore
import COpenSSL

/// Signs precomputed digests with an EC private key, whatever the curve.
///
/// `SigningKey` picks the digest from the curve (SHA-384 for P-384); Apple's intermediate is a
/// P-384 key that signs credential certificates with ecdsa-with-SHA256, so the test PKI needs
/// to choose the digest itself. Output is a DER `ECDSA-Sig-Value`.
final class DigestSigner: @unchecked Sendable {
    private let pkey: OpaquePointer

    /// Loads the key from `SigningKey`'s PKCS #8 PEM.
    init(_ key: SigningKey) throws(AttestError) {
        let pem = Array(key.pemEncoded.utf8)
        let loaded: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else {
            ERR_clear_error()
            throw AttestError(.keyInvalid, "test PKI key does not load from its own PEM")
        }
        pkey = loaded
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A DER ECDSA signature of `digest` (no hashing here).
    func sign(digest: [UInt8]) throws(AttestError) -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new(pkey, nil) else { throw AttestError(.crypto, "EVP_PKEY_CTX_new") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var length = 0
        guard EVP_PKEY_sign_init(ctx) == 1, EVP_PKEY_sign(ctx, nil, &length, digest, digest.count) == 1 else {
            ERR_clear_error()
            throw AttestError(.crypto, "EVP_PKEY_sign_init")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(ctx, &signature, &length, digest, digest.count) == 1 else {
            ERR_clear_error()
            throw AttestError(.crypto, "EVP_PKEY_sign")
        }
        return Array(signature.prefix(length))
    }
}
