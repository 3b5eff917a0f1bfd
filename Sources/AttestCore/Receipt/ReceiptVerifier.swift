import COpenSSL
import Synchronization

/// Verifies App Attest receipts at a given time: CMS SignedData (indefinite-length BER, the
/// content in chunks, one signer, no signed attributes) read and checked with OpenSSL's CMS API,
/// its signing certificate chained to the pinned anchor (Apple Root CA - G3), the chain
/// required to be leaf ← intermediate ← anchor with Apple's receipt markers on the leaf and
/// the intermediate (`AppAttestReceipt.Marker`), then the payload parsed (`ReceiptPayload`).
///
/// Every receipt Apple signs in a year has the same signing certificate, so a chain that
/// verified is cached by the SHA-256 of that certificate's DER with the window in which all
/// three certificates are valid; later receipts signed by it cost the CMS parse and one P-256
/// signature check. Time is injected: fixtures verify at their own time, fresh receipts at now.
public final class ReceiptVerifier: @unchecked Sendable {
    /// The largest receipt read (Apple's are about 4 KiB).
    public static let maxReceiptBytes = 64 * 1024
    /// The most certificates a receipt may carry (Apple's carry three).
    public static let maxCertificates = 4
    /// Signing certificates kept (Apple has one at a time; tests make many).
    public static let cacheCapacity = 16

    public let anchor: Certificate
    private let store: OpaquePointer
    private let leafMarker: OpaquePointer
    private let intermediateMarker: OpaquePointer
    /// Verified signing certificates by the SHA-256 of their DER: the window in which their
    /// chain is valid, and their key (for `contentFromCachedSigner`).
    private let cache = Mutex<[[UInt8]: (validFrom: Timestamp, validUntil: Timestamp, key: ECPublicKey)]>([:])

    /// A verifier trusting exactly `anchor` (tests pass a test chain's root).
    public init(anchor: Certificate) throws(AttestError) {
        guard let store = X509_STORE_new() else { throw AttestError.openSSL(.crypto, "X509_STORE_new") }
        guard X509_STORE_add_cert(store, anchor.x509) == 1,
              let leaf = OBJ_txt2obj(AppAttestReceipt.Marker.leaf, 1),
              let intermediate = OBJ_txt2obj(AppAttestReceipt.Marker.intermediate, 1) else {
            X509_STORE_free(store)
            throw AttestError.openSSL(.crypto, "cannot set up the receipt anchor")
        }
        self.anchor = anchor
        self.store = store
        leafMarker = leaf
        intermediateMarker = intermediate
    }

    /// A verifier trusting only Apple Root CA - G3.
    public static func apple() throws(AttestError) -> ReceiptVerifier {
        try ReceiptVerifier(anchor: AppleRootCAG3.certificate())
    }

    deinit {
        X509_STORE_free(store)
        ASN1_OBJECT_free(leafMarker)
        ASN1_OBJECT_free(intermediateMarker)
    }

    /// Signing certificates whose chain is cached.
    public var cachedSigners: Int { cache.withLock { $0.count } }

    /// The key of a cached signing certificate whose window contains `time`.
    func cachedKey(_ hash: [UInt8], at time: Timestamp) -> ECPublicKey? {
        guard let entry = cache.withLock({ $0[hash] }), entry.validFrom <= time, time < entry.validUntil else {
            return nil
        }
        return entry.key
    }

    /// Verifies `der` (the receipt's bytes) at `time` and returns its fields. Throws
    /// `.receiptMalformed` (not a receipt, or a payload outside its limits), `.receiptChain`
    /// or `.receiptSignature`. The caller then checks what it knows (`AppAttestReceipt.check`).
    public func verify<C: Collection>(_ der: C, at time: Timestamp) throws(AttestError) -> AppAttestReceipt
    where C.Element == UInt8 {
        guard der.count <= Self.maxReceiptBytes else {
            throw AttestError(.receiptMalformed, "\(der.count) bytes (at most \(Self.maxReceiptBytes))")
        }
        let bytes = Array(der)
        if let content = contentFromCachedSigner(bytes, at: time) {
            return try AppAttestReceipt(payload: ReceiptPayload(content[...]))
        }
        let cms = try Self.parse(bytes)
        defer { CMS_ContentInfo_free(cms) }
        let signer = try signingCertificate(cms)
        defer { X509_free(signer.x509) }
        try verifyChain(signer: signer.x509, signerDER: signer.der, others: signer.others, at: time)
        let payload = try content(cms)
        return try AppAttestReceipt(payload: ReceiptPayload(payload[...]))
    }

    /// The CMS structure: SignedData over id-data, as BER.
    private static func parse(_ bytes: [UInt8]) throws(AttestError) -> OpaquePointer {
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return d2i_CMS_bio(bio, nil)
        }
        guard let cms = parsed else {
            clearOpenSSLErrors()
            throw AttestError(.receiptMalformed, "not a CMS structure")
        }
        guard OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed,
              let contentType = CMS_get0_eContentType(cms), OBJ_obj2nid(contentType) == NID_pkcs7_data else {
            CMS_ContentInfo_free(cms)
            throw AttestError(.receiptMalformed, "not CMS SignedData over data")
        }
        return cms
    }

    /// The one signer's certificate (a new reference), its DER, and the other certificates' DER.
    private func signingCertificate(_ cms: OpaquePointer) throws(AttestError)
        -> (x509: OpaquePointer, der: [UInt8], others: [[UInt8]]) {
        guard let signers = CMS_get0_SignerInfos(cms), attest_sk_CMS_SignerInfo_num(signers) == 1,
              let info = attest_sk_CMS_SignerInfo_value(signers, 0) else {
            throw AttestError(.receiptMalformed, "not exactly one signer")
        }
        guard let certs = CMS_get1_certs(cms) else { throw AttestError(.receiptChain, "no certificates") }
        defer { attest_sk_X509_pop_free(certs) }
        let count = attest_sk_X509_num(certs)
        guard count <= Self.maxCertificates else {
            throw AttestError(.receiptMalformed, "\(count) certificates (at most \(Self.maxCertificates))")
        }
        var signer: OpaquePointer? = nil
        var others = [[UInt8]]()
        for i in 0..<count {
            guard let cert = attest_sk_X509_value(certs, i) else { continue }
            if signer == nil, CMS_SignerInfo_cert_cmp(info, cert) == 0 {
                signer = cert
            } else {
                others.append(try Self.der(cert))
            }
        }
        guard let signer, X509_up_ref(signer) == 1 else {
            throw AttestError(.receiptChain, "the signer's certificate is not in the receipt")
        }
        do { return (signer, try Self.der(signer), others) } catch {
            X509_free(signer)
            throw error
        }
    }

    private static func der(_ cert: OpaquePointer) throws(AttestError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(cert, &out)
        guard length > 0, let out else { throw AttestError.openSSL(.crypto, "i2d_X509") }
        defer { attest_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// leaf ← intermediate ← anchor at `time`, with both markers; cached by the leaf's DER.
    private func verifyChain(signer: OpaquePointer, signerDER: [UInt8], others: [[UInt8]],
                             at time: Timestamp) throws(AttestError) {
        let hash = SHA256.hash(signerDER)
        if cachedKey(hash, at: time) != nil { return }
        let intermediates = try others.map { (der) throws(AttestError) -> Certificate in
            do { return try Certificate(derEncoded: der) } catch {
                throw AttestError(.receiptChain, "a receipt certificate does not parse")
            }
        }
        // The untrusted stack and the chain borrow these X509s: keep them to the end (an optimised
        // build releases `intermediates` after its last use otherwise, and the chain dangles).
        defer { withExtendedLifetime(intermediates) {} }
        guard let ctx = X509_STORE_CTX_new() else { throw AttestError.openSSL(.crypto, "X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(ctx) }
        let untrusted = attest_sk_X509_new_null()
        defer { attest_sk_X509_free(untrusted) }
        for cert in intermediates { _ = attest_sk_X509_push(untrusted, cert.x509) }
        guard X509_STORE_CTX_init(ctx, store, signer, untrusted) == 1 else {
            throw AttestError.openSSL(.crypto, "X509_STORE_CTX_init")
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), time_t(time.seconds))
        guard X509_verify_cert(ctx) == 1 else {
            let code = X509_STORE_CTX_get_error(ctx), depth = X509_STORE_CTX_get_error_depth(ctx)
            clearOpenSSLErrors()
            throw AttestError(.receiptChain, "\(String(cString: X509_verify_cert_error_string(Int(code)))) "
                                             + "at depth \(depth) (time \(time.iso8601))")
        }
        guard let chain = X509_STORE_CTX_get0_chain(ctx), attest_sk_X509_num(chain) == 3,
              let leaf = attest_sk_X509_value(chain, 0), let middle = attest_sk_X509_value(chain, 1),
              let top = attest_sk_X509_value(chain, 2), X509_cmp(top, anchor.x509) == 0 else {
            throw AttestError(.receiptChain, "the chain is not signer ← intermediate ← the anchor")
        }
        guard X509_get_ext_by_OBJ(leaf, leafMarker, -1) >= 0 else {
            throw AttestError(.receiptChain, "the signing certificate lacks the receipt marker "
                                             + AppAttestReceipt.Marker.leaf)
        }
        guard X509_get_ext_by_OBJ(middle, intermediateMarker, -1) >= 0 else {
            throw AttestError(.receiptChain,
                              "the intermediate lacks the marker " + AppAttestReceipt.Marker.intermediate)
        }
        var from = Timestamp(seconds: Int64.min), until = Timestamp(seconds: Int64.max)
        for cert in [leaf, middle, top] {
            from = max(from, Certificate.timestamp(X509_get0_notBefore(cert)))
            until = min(until, Certificate.timestamp(X509_get0_notAfter(cert)))
        }
        // A signer whose key is not a P-256 key this verifier can prepare is verified every time.
        guard let key = try? ECPublicKey(subjectPublicKeyInfo: Array(CertificateFields(derEncoded: signerDER[...])
            .subjectPublicKeyInfo)) else { return }
        cache.withLock { entries in
            if entries.count >= Self.cacheCapacity { entries.removeAll() }
            entries[hash] = (from, until, key)
        }
    }

    /// The signed content, after checking the signer's signature over it.
    private func content(_ cms: OpaquePointer) throws(AttestError) -> [UInt8] {
        guard let out = BIO_new(BIO_s_mem()) else { throw AttestError.openSSL(.crypto, "BIO_new") }
        defer { BIO_free(out) }
        guard CMS_verify(cms, nil, nil, nil, out, UInt32(CMS_NO_SIGNER_CERT_VERIFY | CMS_BINARY)) == 1 else {
            clearOpenSSLErrors()
            throw AttestError(.receiptSignature, "the signature does not verify over the content")
        }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = attest_BIO_get_mem_data(out, &data)
        guard length >= 0, length <= ReceiptPayload.maxBytes else {
            throw AttestError(.receiptMalformed, "payload of \(length) bytes (at most \(ReceiptPayload.maxBytes))")
        }
        guard let data, length > 0 else { throw AttestError(.receiptMalformed, "empty payload") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }
}
