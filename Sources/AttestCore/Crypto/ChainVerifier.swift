import COpenSSL
import Synchronization

/// Verifies certificate chains with OpenSSL at a given time against injected trust anchors.
///
/// The first chain through an intermediate is verified in full (`X509_verify_cert` with the
/// anchors trusted and the intermediates untrusted). The intermediate is then cached, keyed by
/// the SHA-256 of its DER, together with the window in which it and its issuer are valid; a
/// later chain through the same intermediate at a time inside that window costs one signature
/// check (the leaf's). For a leaf shaped like App Attest's, that check is made directly on the
/// leaf's DER with the intermediate's prepared key (`VerifiedIntermediate.admits`), because
/// parsing a certificate with OpenSSL 3.0 (`d2i_X509`) decodes its public key through
/// `OSSL_DECODER`, which alone costs about a fifth of a P-384 verification; any other leaf
/// goes through `X509_verify_cert` with the intermediate as a partial-chain anchor.
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

    /// Chains decided by the direct leaf check (no `X509_verify_cert`), since creation.
    public var directLeafChecks: Int { directChecks.load(ordering: .relaxed) }
    private let directChecks = Atomic<Int>(0)
    /// Chains handed to `X509_verify_cert` (passed or failed), since creation.
    public var openSSLChecks: Int { fullChecks.load(ordering: .relaxed) }
    private let fullChecks = Atomic<Int>(0)

    /// Whether a chain through `intermediateDER` verified here before and is cached for `time`:
    /// a caller holding several verifiers asks this one first, instead of paying a failing
    /// chain build (two certificate parses) in the others.
    public func hasVerified(intermediateDER: ArraySlice<UInt8>, at time: Timestamp) -> Bool {
        cached(intermediateDER, at: time) != nil
    }

    /// The cached intermediate with this DER, if its validity window contains `time`.
    private func cached(_ intermediateDER: ArraySlice<UInt8>, at time: Timestamp) -> VerifiedIntermediate? {
        guard let entry = cache.withLock({ $0[SHA256.hash(intermediateDER)] }),
              entry.validFrom <= time, time < entry.validUntil else { return nil }
        return entry
    }

    /// Verifies `leafDER` ← `intermediatesDER` ← an anchor at `time`; throws `.certificateChain`.
    public func verify(leafDER: ArraySlice<UInt8>, intermediatesDER: [ArraySlice<UInt8>],
                       at time: Timestamp) throws(AttestError) -> Certificate {
        _ = try verifiedLeafFields(leafDER: leafDER, intermediatesDER: intermediatesDER, at: time)
        return try Certificate(derEncoded: leafDER)
    }

    /// As `verify`, returning the leaf's fields read from its DER (`.certificateChain` when
    /// they cannot be read), without parsing the leaf with OpenSSL on the cached fast path.
    func verifiedLeafFields(leafDER: ArraySlice<UInt8>, intermediatesDER: [ArraySlice<UInt8>],
                            at time: Timestamp) throws(AttestError) -> CertificateFields {
        let fields: CertificateFields
        do { fields = try CertificateFields(derEncoded: leafDER) } catch {
            // Let OpenSSL say what is wrong with it, if anything chains at all.
            _ = try verifyWithOpenSSL(leafDER: leafDER, intermediatesDER: intermediatesDER, at: time)
            throw AttestError(.certificateChain, "credential certificate: \(error.reason)")
        }
        if intermediatesDER.count == 1, let cached = cached(intermediatesDER[0], at: time),
           cached.admits(fields, at: time) {
            directChecks.add(1, ordering: .relaxed)
            return fields
        }
        _ = try verifyWithOpenSSL(leafDER: leafDER, intermediatesDER: intermediatesDER, at: time)
        return fields
    }

    /// The chain through `X509_verify_cert`: partial-chain from a cached intermediate inside its
    /// window, else in full (caching the intermediate when the chain is leaf ← it ← anchor).
    private func verifyWithOpenSSL(leafDER: ArraySlice<UInt8>, intermediatesDER: [ArraySlice<UInt8>],
                                   at time: Timestamp) throws(AttestError) -> Certificate {
        fullChecks.add(1, ordering: .relaxed)
        let leaf = try Certificate(derEncoded: leafDER)
        if intermediatesDER.count == 1 {
            if let cached = cached(intermediatesDER[0], at: time) {
                try Self.run(store: cached.store, leaf: leaf, untrusted: [], at: time)
                return leaf
            }
            let intermediate = try Certificate(derEncoded: intermediatesDER[0])
            let chain = try Self.run(store: anchorStore, leaf: leaf, untrusted: [intermediate], at: time)
            // chain = [leaf, intermediate, anchor]: cache the intermediate when that is the shape
            // and the chain's second certificate is the one supplied. OpenSSL may build the
            // chain through an anchor instead (anchors that are not self-signed, e.g. a test
            // CA file holding its intermediate too) and leave the supplied one unused: caching
            // that one would trust whatever it signs.
            if chain.validity.count == 3, chain.secondIsFirstUntrusted,
               let entry = VerifiedIntermediate(intermediate, issuer: chain.validity[2]) {
                cache.withLock { entries in
                    if entries.count >= Self.cacheCapacity { entries.removeAll() }
                    entries[SHA256.hash(intermediatesDER[0])] = entry
                }
            }
            return leaf
        }
        let intermediates = try intermediatesDER.map { (der) throws(AttestError) -> Certificate in
            try Certificate(derEncoded: der)
        }
        try Self.run(store: anchorStore, leaf: leaf, untrusted: intermediates, at: time)
        return leaf
    }

    /// Runs `X509_verify_cert`; returns the verified chain's certificates' validity as
    /// (notBefore, notAfter) pairs, leaf first, and whether its second certificate is the
    /// first of `untrusted` (rather than an anchor or another certificate).
    @discardableResult
    static func run(store: OpaquePointer, leaf: Certificate, untrusted: [Certificate],
                    at time: Timestamp) throws(AttestError)
        -> (validity: [(Timestamp, Timestamp)], secondIsFirstUntrusted: Bool) {
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
        var secondIsFirstUntrusted = false
        if let chain = X509_STORE_CTX_get0_chain(ctx) {
            for i in 0..<attest_sk_X509_num(chain) {
                let cert = attest_sk_X509_value(chain, i)
                validity.append((Certificate.timestamp(X509_get0_notBefore(cert)),
                                 Certificate.timestamp(X509_get0_notAfter(cert))))
                if i == 1, let first = untrusted.first { secondIsFirstUntrusted = X509_cmp(cert, first.x509) == 0 }
            }
        }
        return (validity, secondIsFirstUntrusted)
    }
}

/// An intermediate that chained to an anchor: a one-certificate partial-chain store, and its
/// subject and prepared public key for checking leaves directly.
final class VerifiedIntermediate: @unchecked Sendable {
    let store: OpaquePointer
    let validFrom: Timestamp
    let validUntil: Timestamp
    /// The encoded subject Name a leaf's issuer must equal.
    let subject: [UInt8]
    /// The intermediate's key, when the intermediate's extensions are ones that constrain
    /// nothing below it (otherwise `admits` always defers to `X509_verify_cert`).
    let key: ECPublicKey?

    init?(_ intermediate: Certificate, issuer: (Timestamp, Timestamp)) {
        guard let store = X509_STORE_new() else { return nil }
        guard X509_STORE_add_cert(store, intermediate.x509) == 1 else { X509_STORE_free(store); return nil }
        X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        self.store = store
        // Half-open, as OpenSSL's own checks: valid from notBefore, expired at notAfter.
        validFrom = max(intermediate.notBefore, issuer.0)
        validUntil = min(intermediate.notAfter, issuer.1)
        let fields = try? intermediate.fields()
        subject = fields.map { Array($0.subject) } ?? []
        let inert: Set<ObjectIdentifier> = [.basicConstraints, .keyUsage, .subjectKeyIdentifier,
                                            .authorityKeyIdentifier]
        if let fields, Set(fields.extensions.keys).isSubset(of: inert) {
            key = try? ECPublicKey(subjectPublicKeyInfo: Array(fields.subjectPublicKeyInfo))
        } else {
            key = nil
        }
    }

    deinit { X509_STORE_free(store) }

    /// ecdsa-with-SHA256 and ecdsa-with-SHA384 AlgorithmIdentifiers (no parameters).
    static let ecdsaWithSHA256: [UInt8] = [0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]
    static let ecdsaWithSHA384: [UInt8] = [0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x03]
    /// Apple's private arc (1.2.840.113635): extensions OpenSSL does not interpret.
    static let appleArc: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63]

    /// Whether `leaf`, issued by this intermediate, is valid at `time`, checked as
    /// `X509_verify_cert` would for an end-entity certificate under this (trusted) intermediate:
    /// v3; the same ECDSA algorithm inside and outside the TBSCertificate; issuer equal to this
    /// subject; `notBefore ≤ time < notAfter` (OpenSSL counts notAfter itself as expired); only
    /// basicConstraints (not a CA), keyUsage, extKeyUsage and Apple-arc extensions, none critical
    /// but the first two, every critical flag a DER TRUE (0xFF; OpenSSL also takes 0x01 as TRUE,
    /// so any other octet is left to it); and the signature verifies. `false` means "not decided here": the
    /// caller then asks OpenSSL, which gives the verdict and the reason.
    func admits(_ leaf: CertificateFields, at time: Timestamp) -> Bool {
        guard let key, leaf.version == 2, leaf.tbsSignatureAlgorithm.elementsEqual(leaf.signatureAlgorithm),
              leaf.issuer.elementsEqual(subject), leaf.signatureBits.first == 0,
              let notBefore = leaf.notBefore, let notAfter = leaf.notAfter, notBefore <= time, time < notAfter,
              leaf.criticalExtensions.isSubset(of: [.basicConstraints, .keyUsage]),
              leaf.irregularCriticalFlags.isEmpty else { return false }
        for (oid, value) in leaf.extensions where !oid.contentOctets.starts(with: Self.appleArc) {
            switch oid {
            case .basicConstraints: guard value.elementsEqual([0x30, 0x00]) else { return false }
            case .keyUsage:
                guard value.count >= 3, value.first == 0x03, Int(value[value.startIndex + 1]) == value.count - 2 else {
                    return false
                }
            case .extendedKeyUsage: guard Self.isSequenceOfOIDs(value) else { return false }
            default: return false
            }
        }
        let digest: [UInt8]
        if leaf.signatureAlgorithm.elementsEqual(Self.ecdsaWithSHA256) {
            digest = SHA256.hash(leaf.tbsCertificate)
        } else if leaf.signatureAlgorithm.elementsEqual(Self.ecdsaWithSHA384) {
            digest = SHA384.hash(leaf.tbsCertificate)
        } else {
            return false
        }
        return key.isValidSignature(leaf.signatureBits.dropFirst(), digest: digest)
    }

    static func isSequenceOfOIDs(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let node = try? DER.parse(bytes), node.isUniversal(DER.Node.sequence),
              let items = try? node.children() else { return false }
        return items.allSatisfy { $0.isUniversal(DER.Node.objectIdentifier) && !$0.constructed && !$0.content.isEmpty }
    }
}
