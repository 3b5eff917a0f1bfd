import COpenSSL
import Synchronization

/// A private key held by OpenSSL: token signing (ES256, RS256), the test PKI and the
/// software device.
///
/// Signing hashes with SHA-256 (SHA-384 for P-384 keys) and signs the digest through one
/// prepared `EVP_PKEY_CTX`, reused across calls.
public final class SigningKey: @unchecked Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case p256 = "P-256", p384 = "P-384", rsa2048 = "RSA-2048"
    }

    let pkey: OpaquePointer
    public let kind: Kind
    private let signContext = Mutex<OpaquePointer?>(nil)

    init(taking pkey: OpaquePointer) throws(AttestError) {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA:
            kind = .rsa2048
        case EVP_PKEY_EC:
            kind = EVP_PKEY_get_bits(pkey) == 384 ? .p384 : .p256
            guard EVP_PKEY_get_bits(pkey) == 256 || EVP_PKEY_get_bits(pkey) == 384 else {
                EVP_PKEY_free(pkey)
                throw AttestError(.keyInvalid, "EC keys must be P-256 or P-384")
            }
        default:
            EVP_PKEY_free(pkey)
            throw AttestError(.keyInvalid, "unsupported key type")
        }
        self.pkey = pkey
    }

    /// A fresh key from OpenSSL's CSPRNG.
    public static func generate(_ kind: Kind) throws(AttestError) -> SigningKey {
        let key: OpaquePointer?
        switch kind {
        case .p256: key = attest_generate_ec_key("P-256")
        case .p384: key = attest_generate_ec_key("P-384")
        case .rsa2048: key = attest_generate_rsa_key(2048)
        }
        guard let key else { throw AttestError.openSSL(.crypto, "key generation") }
        return try SigningKey(taking: key)
    }

    /// A key from PEM (`PRIVATE KEY`, PKCS #8, or the traditional EC/RSA forms).
    public convenience init(pemEncoded pem: String) throws(AttestError) {
        let key = try MemoryBIO.reading(pem) { bio throws(AttestError) -> OpaquePointer in
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw AttestError.openSSL(.keyInvalid, "not a PEM private key")
            }
            return key
        }
        try self.init(taking: key)
    }

    deinit {
        signContext.withLock { if let ctx = $0 { EVP_PKEY_CTX_free(ctx) } }
        EVP_PKEY_free(pkey)
    }

    /// PKCS #8 PEM, unencrypted: keep the file mode 0600.
    public var pemEncoded: String {
        (try? MemoryBIO.writing { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) }) ?? ""
    }

    /// The public half as DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] { ECPublicKey.spki(pkey) }

    /// The public point (`0x04 ‖ x ‖ y`) of an EC key; empty for RSA.
    public var x962Point: [UInt8] { kind == .rsa2048 ? [] : ECPublicKey.encodedPoint(pkey) }

    /// The public key of an EC key, ready to verify.
    public func publicKey() throws(AttestError) -> ECPublicKey {
        try ECPublicKey(subjectPublicKeyInfo: subjectPublicKeyInfo)
    }

    /// RSA modulus and public exponent, big-endian (for a JWK); `nil` for EC keys.
    public var rsaComponents: (n: [UInt8], e: [UInt8])? {
        guard kind == .rsa2048 else { return nil }
        func bn(_ name: String) -> [UInt8] {
            var value: OpaquePointer? = nil
            guard EVP_PKEY_get_bn_param(pkey, name, &value) == 1, let value else { return [] }
            defer { BN_free(value) }
            var out = [UInt8](repeating: 0, count: Int((BN_num_bits(value) + 7) / 8))
            BN_bn2bin(value, &out)
            return out
        }
        return (bn("n"), bn("e"))
    }

    /// The digest this key signs with: SHA-384 for P-384, SHA-256 otherwise.
    var digestMD: OpaquePointer { kind == .p384 ? SHA384.md : SHA256.md }

    /// Signs `message`: a DER ECDSA signature for EC keys, PKCS #1 v1.5 for RSA.
    public func sign<M: Collection>(_ message: M) throws(AttestError) -> [UInt8] where M.Element == UInt8 {
        let digest = kind == .p384 ? SHA384.hash(message) : SHA256.hash(message)
        return try signContext.withLock { slot throws(AttestError) -> [UInt8] in
            if slot == nil {
                guard let ctx = EVP_PKEY_CTX_new(pkey, nil), EVP_PKEY_sign_init(ctx) == 1,
                      EVP_PKEY_CTX_set_signature_md(ctx, digestMD) == 1 else {
                    throw AttestError.openSSL(.crypto, "EVP_PKEY_sign_init")
                }
                slot = ctx
            }
            var length = 0
            guard EVP_PKEY_sign(slot, nil, &length, digest, digest.count) == 1 else {
                throw AttestError.openSSL(.crypto, "EVP_PKEY_sign size")
            }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_PKEY_sign(slot, &signature, &length, digest, digest.count) == 1 else {
                throw AttestError.openSSL(.crypto, "EVP_PKEY_sign")
            }
            return Array(signature.prefix(length))
        }
    }
}

/// SHA-384, for P-384 certificate signatures in the test PKI.
public enum SHA384 {
    nonisolated(unsafe) static let md: OpaquePointer = {
        guard let md = EVP_MD_fetch(nil, "SHA384", nil) else { fatalError("OpenSSL has no SHA384") }
        return md
    }()

    public static func hash<C: Collection>(_ data: C) -> [UInt8] where C.Element == UInt8 {
        let bytes = Array(data)
        var out = [UInt8](repeating: 0, count: 48)
        _ = EVP_Digest(bytes, bytes.count, &out, nil, md, nil)
        return out
    }
}
