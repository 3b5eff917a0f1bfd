import COpenSSL
import Synchronization

/// An elliptic-curve public key (P-256 for App Attest keys; P-384 also loads) held by OpenSSL.
///
/// Parse once and keep the object: the verify context is prepared on first use and reused,
/// because OpenSSL 3 pays for an algorithm lookup every time a context is created.
public final class ECPublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// The uncompressed X9.62 point `0x04 ‖ x ‖ y`.
    public let x962Point: [UInt8]
    private let verifyContext = Mutex<OpaquePointer?>(nil)
    /// P-256's domain parameters, built once per process: each point loaded copies them
    /// (`attest_ec_public_key_like`) instead of building the group from its name.
    private static let p256Parameters = Mutex<OpaquePointer?>(nil)

    /// A P-256 key from its 65-byte uncompressed point; fails if the point is not on the curve.
    ///
    /// Built from the point directly on a copy of P-256's parameters, not through the DER
    /// decoder (about a fifteenth of its cost) nor `EVP_PKEY_fromdata` with the curve named
    /// (about a third): a refresh for a device this process has not seen pays it.
    public init<C: Collection>(x962Point point: C) throws(AttestError) where C.Element == UInt8 {
        let bytes = Array(point)
        guard bytes.count == 65, bytes.first == 0x04 else {
            throw AttestError(.publicKeyInvalid, "a P-256 point is 65 bytes starting 0x04, got \(bytes.count)")
        }
        let loaded = Self.p256Parameters.withLock { slot -> OpaquePointer? in
            if slot == nil { slot = attest_ec_parameters("prime256v1") }
            guard let parameters = slot else { return nil }
            return attest_ec_public_key_like(parameters, bytes, bytes.count)
        }
        guard let key = loaded else {
            throw AttestError.openSSL(.publicKeyInvalid, "not a point on P-256")
        }
        pkey = key
        x962Point = bytes
    }

    /// A key from DER SubjectPublicKeyInfo.
    public init(subjectPublicKeyInfo der: [UInt8]) throws(AttestError) {
        var cursor: UnsafePointer<UInt8>? = nil
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buf in
            cursor = buf.baseAddress
            let key = d2i_PUBKEY(nil, &cursor, buf.count)
            if key != nil, cursor != buf.baseAddress.map({ $0 + buf.count }) {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
        guard let parsed else { throw AttestError.openSSL(.publicKeyInvalid, "not a SubjectPublicKeyInfo") }
        guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC else {
            EVP_PKEY_free(parsed)
            throw AttestError(.publicKeyInvalid, "not an EC key")
        }
        pkey = parsed
        x962Point = Self.encodedPoint(parsed)
    }

    /// A key from PEM `PUBLIC KEY`.
    public convenience init(pemEncoded pem: String) throws(AttestError) {
        let der = try MemoryBIO.reading(pem) { bio throws(AttestError) -> [UInt8] in
            guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else {
                throw AttestError.openSSL(.publicKeyInvalid, "not a PEM public key")
            }
            defer { EVP_PKEY_free(key) }
            return Self.spki(key)
        }
        try self.init(subjectPublicKeyInfo: der)
    }

    deinit {
        verifyContext.withLock { if let ctx = $0 { EVP_PKEY_CTX_free(ctx) } }
        EVP_PKEY_free(pkey)
    }

    /// DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] { Self.spki(pkey) }

    /// PEM `PUBLIC KEY`.
    public var pemEncoded: String { pemEncode(subjectPublicKeyInfo, label: "PUBLIC KEY") }

    /// Checks a DER `ECDSA-Sig-Value` over a precomputed digest.
    public func isValidSignature<S: Collection>(_ signature: S, digest: [UInt8]) -> Bool where S.Element == UInt8 {
        let sig = Array(signature)
        return verifyContext.withLock { slot -> Bool in
            if slot == nil {
                guard let ctx = EVP_PKEY_CTX_new(pkey, nil), EVP_PKEY_verify_init(ctx) == 1 else { return false }
                slot = ctx
            }
            let ok = EVP_PKEY_verify(slot, sig, sig.count, digest, digest.count) == 1
            if !ok { clearOpenSSLErrors() }
            return ok
        }
    }

    /// Checks a DER ECDSA signature with SHA-256 over `message` (`ecdsa-with-SHA256`).
    public func isValidSignature<S: Collection, M: Collection>(_ signature: S, message: M) -> Bool
    where S.Element == UInt8, M.Element == UInt8 {
        isValidSignature(signature, digest: SHA256.hash(message))
    }

    static func spki(_ key: OpaquePointer) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let n = i2d_PUBKEY(key, &out)
        guard n > 0, let out else { return [] }
        defer { attest_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(n)))
    }

    static func encodedPoint(_ key: OpaquePointer) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 133)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &buffer, buffer.count, &length) == 1 else {
            return []
        }
        return Array(buffer.prefix(length))
    }
}
