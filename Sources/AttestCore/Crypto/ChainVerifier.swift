import COpenSSL
import Synchronization

/// Verifies certificate chains with OpenSSL at a given time against injected trust anchors.
///
/// The first chain through an intermediate is verified in full (`X509_verify_cert` with the
/// anchors trusted and the intermediates untrusted). The intermediate is then cached, keyed by
/// the SHA-256 of its DER, together with the window in which it and its issuer are valid; a
/// later chain through the same intermediate at a time inside that window is verified with the
/// intermediate as a partial-chain anchor, so it costs one signature check (the leaf's).
public final class ChainVerifier: @unchecked Sendable {
    public let trustAnchors: [Certificate]
    private let anchorStore: OpaquePointer
    private let cache = Mutex<[[UInt8]: VerifiedIntermediate]>([:])
    /// Most intermediates kept; Apple has few, tests make many.
    public static let cacheCapacity = 32

    /// A verifier trusting exactly `trustAnchors`.
    public init(trustAnchors: [Certificate]) throws(AttestError) {
        guard !trustAnchors.isEmpty else { throw AttestError(.certificateChain, "no trust anchor") }
        guard let store = X509_STORE_new() else { throw AttestError.openSSL(.crypto, "X509_STORE_new") }
        for anchor in trustAnchors where X509_STORE_add_cert(store, anchor.x509) != 1 {
            X509_STORE_free(store)
            throw AttestError.openSSL(.certificateChain, "cannot add trust anchor \(anchor.subject)")
        }
        self.trustAnchors = trustAnchors
        self.anchorStore = store
    }

    /// A verifier trusting only Apple's App Attestation Root CA.
    public static func apple() throws(AttestError) -> ChainVerifier {
        try ChainVerifier(trustAnchors: [AppleAppAttestationRoot.certificate()])
    }

    deinit { X509_STORE_free(anchorStore) }

    /// Intermediates currently cached.
    public var cachedIntermediateCount: Int { cache.withLock { $0.count } }

    /// Verifies `leafDER` ← `intermediatesDER` ← an anchor at `time`; throws `.certificateChain`.
    public func verify(leafDER: ArraySlice<UInt8>, intermediatesDER: [ArraySlice<UInt8>], at time: Timestamp) throws(AttestError) -> Certificate {
        let leaf = try Certificate(derEncoded: leafDER)
        if intermediatesDER.count == 1 {
            let key = SHA256.hash(intermediatesDER[0])
            let cached = cache.withLock { $0[key] }
            if let cached, cached.validFrom <= time, time <= cached.validUntil {
                try Self.run(store: cached.store, leaf: leaf, untrusted: [], at: time)
                return leaf
            }
            let intermediate = try Certificate(derEncoded: intermediatesDER[0])
            let chain = try Self.run(store: anchorStore, leaf: leaf, untrusted: [intermediate], at: time)
            // chain = [leaf, intermediate, anchor]: cache the intermediate when that is the shape.
            if chain.count == 3, let entry = VerifiedIntermediate(intermediate, issuer: chain[2]) {
                cache.withLock { entries in
                    if entries.count >= Self.cacheCapacity { entries.removeAll() }
                    entries[key] = entry
                }
            }
            return leaf
        }
        let intermediates = try intermediatesDER.map { (der) throws(AttestError) -> Certificate in try Certificate(derEncoded: der) }
        try Self.run(store: anchorStore, leaf: leaf, untrusted: intermediates, at: time)
        return leaf
    }

    /// Runs `X509_verify_cert`; returns the verified chain's certificates' validity as
    /// (notBefore, notAfter) pairs, leaf first.
    @discardableResult
    static func run(store: OpaquePointer, leaf: Certificate, untrusted: [Certificate], at time: Timestamp) throws(AttestError) -> [(Timestamp, Timestamp)] {
        guard let ctx = X509_STORE_CTX_new() else { throw AttestError.openSSL(.crypto, "X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(ctx) }
        let stack = attest_sk_X509_new_null()
        defer { attest_sk_X509_free(stack) }
        for cert in untrusted { _ = attest_sk_X509_push(stack, cert.x509) }
        guard X509_STORE_CTX_init(ctx, store, leaf.x509, stack) == 1 else {
            throw AttestError.openSSL(.crypto, "X509_STORE_CTX_init")
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), time_t(time.seconds))
        guard X509_verify_cert(ctx) == 1 else {
            let code = X509_STORE_CTX_get_error(ctx)
            let depth = X509_STORE_CTX_get_error_depth(ctx)
            clearOpenSSLErrors()
            let text = String(cString: X509_verify_cert_error_string(Int(code)))
            throw AttestError(.certificateChain, "\(text) at depth \(depth) (time \(time.iso8601))")
        }
        var validity = [(Timestamp, Timestamp)]()
        if let chain = X509_STORE_CTX_get0_chain(ctx) {
            for i in 0..<attest_sk_X509_num(chain) {
                let cert = attest_sk_X509_value(chain, i)
                validity.append((Certificate.timestamp(X509_get0_notBefore(cert)), Certificate.timestamp(X509_get0_notAfter(cert))))
            }
        }
        return validity
    }
}

/// An intermediate that chained to an anchor, as a one-certificate partial-chain store.
final class VerifiedIntermediate: @unchecked Sendable {
    let store: OpaquePointer
    let validFrom: Timestamp
    let validUntil: Timestamp

    init?(_ intermediate: Certificate, issuer: (Timestamp, Timestamp)) {
        guard let store = X509_STORE_new() else { return nil }
        guard X509_STORE_add_cert(store, intermediate.x509) == 1 else { X509_STORE_free(store); return nil }
        X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        self.store = store
        validFrom = max(intermediate.notBefore, issuer.0)
        validUntil = min(intermediate.notAfter, issuer.1)
    }

    deinit { X509_STORE_free(store) }
}
