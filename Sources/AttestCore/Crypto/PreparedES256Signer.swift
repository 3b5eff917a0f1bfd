import COpenSSL
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// ES256 (ECDSA P-256, SHA-256) signatures whose expensive part is prepared ahead.
///
/// An ECDSA signature with nonce `k` is
/// ```
/// r = x(k·G) mod n            ; depends only on k: prepared ahead
/// s = k⁻¹ · (e + r·d) mod n   ; e = the digest as an integer, d = the private key
/// ```
/// so `r` and `k⁻¹` (the scalar multiplication, the affine conversion and the inversion: nearly
/// all of a signature's cost) are prepared ahead, `step` at a time with one inversion between
/// them, and a signature costs three modular multiplications and an addition. A worker prepares
/// up to `capacity` while it has nothing queued (`prepareAhead`); a signature that finds none
/// left prepares a step itself, which still costs less than OpenSSL's one-off signature.
///
/// Nothing weakens the signature:
/// - every `k` is fresh from OpenSSL's CSPRNG (`BN_priv_rand_range_ex`, uniform in [1, n)),
///   used for exactly one signature and then cleared;
/// - a prepared nonce never crosses a `fork`: the reserve belongs to the process that filled
///   it (`processID`), and a child that inherits one discards it before signing;
/// - no timing depends on a secret: `k·G` is OpenSSL's constant-time scalar multiplication
///   by the generator; secrets are multiplied only in Montgomery form on full-width operands
///   (`BN_mod_mul_montgomery`, as OpenSSL's own signer) and added with `BN_mod_add_quick`;
///   the one variable-time step, the inversion, sees only blinded values (`prepare`).
/// Only public calls of OpenSSL 3 are used; `ECDSA_sign_setup`, the old way to pass a
/// prepared nonce, is deprecated and not compiled in.
public final class PreparedES256Signer: @unchecked Sendable {
    /// Nonces prepared together, with one inversion: by `prepareAhead`, or by a signature
    /// that finds none left.
    public static let step = 8
    /// The most nonces `prepareAhead` keeps ready.
    public static let defaultCapacity = 64
    public let capacity: Int
    private let state: Mutex<State>

    /// A signer for `key`, which must be a P-256 key; nothing is prepared until asked or
    /// needed. `processID` says which process is running (tests inject a fork).
    public init(key: SigningKey, capacity: Int = defaultCapacity,
                processID: @escaping @Sendable () -> Int32 = { getpid() }) throws(AttestError) {
        guard key.kind == .p256 else { throw AttestError(.keyInvalid, "ES256 needs a P-256 key") }
        self.capacity = max(Self.step, capacity)
        state = Mutex(try State(pkey: key.pkey, processID: processID))
    }

    /// `r ‖ s` (32 bytes each, RFC 7518 §3.4) over a SHA-256 `digest`.
    public func sign(digest: [UInt8]) throws(AttestError) -> [UInt8] {
        guard digest.count == 32 else { throw AttestError(.crypto, "ES256 signs a 32-byte digest") }
        return try state.withLock { state throws(AttestError) -> [UInt8] in try state.sign(digest, refill: Self.step) }
    }

    /// One step of preparation for a quiet moment (a few hundred µs at most): once a whole
    /// `step` has been used (at most `capacity − step` ready), prepares `step` more, so each
    /// step's inversion is shared by `step` nonces and a worker that answers one request at a
    /// time does this after every `step`-th, not after each. Returns whether another step
    /// would help; `false` also when preparing failed (signatures then prepare their own).
    public func prepareAhead() -> Bool {
        let low = capacity - Self.step
        return state.withLock { state -> Bool in
            let ready = state.preparedInThisProcess
            guard ready <= low else { return false }
            do { try state.fill(upTo: ready + Self.step) } catch { return false }
            return state.reserve.count <= low
        }
    }

    /// Prepares nonces until `count` are ready (tests, benchmarks).
    public func prepare(upTo count: Int) throws(AttestError) {
        try state.withLock { state throws(AttestError) in try state.fill(upTo: count) }
    }

    /// Nonces prepared and not used yet, in this process.
    public var prepared: Int { state.withLock { $0.preparedInThisProcess } }

    deinit { state.withLock { $0.release() } }

    /// Test hook: signs with a given nonce `k` (big-endian), so that a published vector
    /// (RFC 6979's, which fixes k) checks the arithmetic. Never used to sign tokens.
    func sign(digest: [UInt8], nonce k: [UInt8]) throws(AttestError) -> [UInt8] {
        try state.withLock { state throws(AttestError) -> [UInt8] in
            guard let scalar = BN_bin2bn(k, Int32(k.count), nil) else {
                throw AttestError.openSSL(.crypto, "BN_bin2bn")
            }
            defer { BN_clear_free(scalar) }
            BN_set_flags(scalar, BN_FLG_CONSTTIME)
            guard BN_is_zero(scalar) == 0, BN_cmp(scalar, state.order) < 0 else {
                throw AttestError(.crypto, "nonce out of range")
            }
            state.reserve += try state.prepare([scalar])
            return try state.sign(digest, refill: 1)
        }
    }

    /// One prepared nonce: `r` and `k⁻¹ mod n`, both reduced.
    struct Nonce {
        let r: OpaquePointer
        let kInverse: OpaquePointer
    }

    /// Owned OpenSSL objects, freed by `release()` (one instance, inside the class's `Mutex`).
    struct State {
        let group: OpaquePointer
        let order: OpaquePointer
        let montgomery: OpaquePointer
        /// `d · R mod n`: the private key in Montgomery form.
        let privateMontgomery: OpaquePointer
        let context: OpaquePointer
        let point: OpaquePointer
        let processID: @Sendable () -> Int32
        var owner: Int32
        var reserve: [Nonce] = []

        init(pkey: OpaquePointer, processID: @escaping @Sendable () -> Int32) throws(AttestError) {
            var privateKey: OpaquePointer? = nil
            let context = BN_CTX_secure_new(), group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
            let order = group.flatMap { EC_GROUP_get0_order($0) }.flatMap { BN_dup($0) }
            let montgomery = BN_MONT_CTX_new()
            let point = group.flatMap { EC_POINT_new($0) }, privateMontgomery = BN_secure_new()
            defer { BN_clear_free(privateKey) }
            guard let context, let group, let order, let montgomery, let point, let privateMontgomery,
                  BN_MONT_CTX_set(montgomery, order, context) == 1,
                  EVP_PKEY_get_bn_param(pkey, "priv", &privateKey) == 1, let d = privateKey,
                  BN_cmp(d, order) < 0, BN_to_montgomery(privateMontgomery, d, montgomery, context) == 1 else {
                Self.free(group, order, montgomery, privateMontgomery, context, point)
                throw AttestError.openSSL(.keyInvalid, "preparing the ES256 signer")
            }
            BN_set_flags(privateMontgomery, BN_FLG_CONSTTIME)
            self.group = group
            self.order = order
            self.montgomery = montgomery
            self.privateMontgomery = privateMontgomery
            self.context = context
            self.point = point
            self.processID = processID
            owner = processID()
        }

        /// Frees everything (the class's `deinit`).
        mutating func release() {
            discardReserve()
            Self.free(group, order, montgomery, privateMontgomery, context, point)
        }

        private static func free(_ group: OpaquePointer?, _ order: OpaquePointer?, _ montgomery: OpaquePointer?,
                                 _ privateMontgomery: OpaquePointer?, _ context: OpaquePointer?,
                                 _ point: OpaquePointer?) {
            EC_POINT_free(point)
            BN_clear_free(privateMontgomery)
            BN_MONT_CTX_free(montgomery)
            BN_free(order)
            EC_GROUP_free(group)
            BN_CTX_free(context)
        }

        var preparedInThisProcess: Int { owner == processID() ? reserve.count : 0 }

        /// Drops the reserve when another process filled it (this one is a forked child).
        mutating func claim() {
            let current = processID()
            guard current != owner else { return }
            discardReserve()
            owner = current
        }

        mutating func discardReserve() {
            for nonce in reserve {
                BN_free(nonce.r)
                BN_clear_free(nonce.kInverse)
            }
            reserve.removeAll()
        }

        mutating func fill(upTo count: Int) throws(AttestError) {
            claim()
            while reserve.count < count {
                var ks = [OpaquePointer]()
                defer { ks.forEach { BN_clear_free($0) } }
                for _ in 0..<min(PreparedES256Signer.step, count - reserve.count) { ks.append(try randomScalar()) }
                reserve += try prepare(ks)
            }
        }

        /// Signs with the last prepared nonce, preparing `refill` first when none is left.
        mutating func sign(_ digest: [UInt8], refill: Int) throws(AttestError) -> [UInt8] {
            claim()
            guard let e = BN_bin2bn(digest, 32, nil) else { throw AttestError.openSSL(.crypto, "BN_bin2bn") }
            defer { BN_free(e) }
            // e < 2^256 < 2n: one subtraction reduces it (e is public).
            if BN_cmp(e, order) >= 0 { BN_sub(e, e, order) }
            while true {
                if reserve.isEmpty { try fill(upTo: refill) }
                let nonce = reserve.removeLast()
                defer {
                    BN_free(nonce.r)
                    BN_clear_free(nonce.kInverse)
                }
                guard let s = try signature(e: e, nonce: nonce) else { continue }
                defer { BN_clear_free(s) }
                var out = [UInt8](repeating: 0, count: 64)
                guard BN_bn2binpad(nonce.r, &out, 32) == 32,
                      out.withUnsafeMutableBufferPointer({ BN_bn2binpad(s, $0.baseAddress! + 32, 32) }) == 32 else {
                    throw AttestError.openSSL(.crypto, "BN_bn2binpad")
                }
                return out
            }
        }

        /// `s = k⁻¹ · (e + r·d) mod n`; `nil` when s = 0 (the nonce is dropped, another taken).
        func signature(e: OpaquePointer, nonce: Nonce) throws(AttestError) -> OpaquePointer? {
            guard let sum = BN_secure_new(), let s = BN_secure_new() else {
                throw AttestError.openSSL(.crypto, "BN_secure_new")
            }
            defer { BN_clear_free(sum) }
            BN_set_flags(sum, BN_FLG_CONSTTIME)
            BN_set_flags(s, BN_FLG_CONSTTIME)
            // r·(dR)·R⁻¹ = r·d; + e; ·R (into Montgomery form); ·k⁻¹·R⁻¹ = k⁻¹(e + r·d).
            guard BN_mod_mul_montgomery(sum, nonce.r, privateMontgomery, montgomery, context) == 1,
                  BN_mod_add_quick(sum, sum, e, order) == 1,
                  BN_to_montgomery(sum, sum, montgomery, context) == 1,
                  BN_mod_mul_montgomery(s, sum, nonce.kInverse, montgomery, context) == 1 else {
                BN_clear_free(s)
                throw AttestError.openSSL(.crypto, "ES256 signature arithmetic")
            }
            if BN_is_zero(s) == 1 {
                BN_clear_free(s)
                return nil
            }
            return s
        }

        /// A scalar uniform in [1, n) from the CSPRNG, flagged for constant-time use.
        func randomScalar() throws(AttestError) -> OpaquePointer {
            guard let k = BN_secure_new() else { throw AttestError.openSSL(.crypto, "BN_secure_new") }
            BN_set_flags(k, BN_FLG_CONSTTIME)
            repeat {
                guard BN_priv_rand_range_ex(k, order, 0, context) == 1 else {
                    BN_clear_free(k)
                    throw AttestError.openSSL(.crypto, "BN_priv_rand_range_ex")
                }
            } while BN_is_zero(k) == 1
            return k
        }

        /// The nonces for the scalars `ks` (the caller keeps and frees them): `r = x(k·G) mod n`
        /// and `k⁻¹`. A scalar giving r = 0 (probability about 2⁻²⁵⁶) is skipped.
        ///
        /// The inverses come from one inversion for the whole batch (Montgomery's trick), taken
        /// blinded: each `k` is first multiplied by its own fresh random `b` (in Montgomery
        /// form, `u = k·b·R⁻¹`), so the fast, variable-time products and inversion see only
        /// values uniform and independent of the nonces; `k⁻¹ = u⁻¹·b·R⁻¹` brings each back.
        func prepare(_ ks: [OpaquePointer]) throws(AttestError) -> [Nonce] {
            var rs = [OpaquePointer](), us = [OpaquePointer](), blinds = [OpaquePointer](), prefix = [OpaquePointer]()
            defer {
                rs.forEach { BN_free($0) }
                (us + blinds).forEach { BN_clear_free($0) }
                prefix.forEach { BN_free($0) }
            }
            func fail(_ what: String) -> AttestError { AttestError.openSSL(.crypto, "preparing ES256 nonces: \(what)") }
            guard let x = BN_new() else { throw fail("BN_new") }
            defer { BN_free(x) }
            for k in ks {
                guard let r = BN_new() else { throw fail("BN_new") }
                guard EC_POINT_mul(group, point, k, nil, nil, context) == 1,
                      EC_POINT_get_affine_coordinates(group, point, x, nil, context) == 1,
                      BN_nnmod(r, x, order, context) == 1, BN_is_zero(r) == 0 else {
                    BN_free(r)
                    continue
                }
                rs.append(r)
                let b = try randomScalar()
                blinds.append(b)
                guard let u = BN_secure_new() else { throw fail("BN_secure_new") }
                us.append(u)
                guard BN_mod_mul_montgomery(u, k, b, montgomery, context) == 1,
                      let product = prefix.isEmpty ? BN_dup(u) : BN_new() else { throw fail("blinding") }
                prefix.append(product)
                if prefix.count > 1, BN_mod_mul(product, prefix[prefix.count - 2], u, order, context) != 1 {
                    throw fail("BN_mod_mul")
                }
            }
            guard let last = prefix.last else { return [] }
            // t = (u₀ ⋯ uᵢ)⁻¹, walking down: uᵢ⁻¹ = t · (u₀ ⋯ uᵢ₋₁), then t ← t · uᵢ.
            guard let t = BN_mod_inverse(nil, last, order, context), let uInverse = BN_new() else {
                throw fail("BN_mod_inverse")
            }
            defer {
                BN_free(t)
                BN_free(uInverse)
            }
            var inverses = [OpaquePointer?](repeating: nil, count: us.count)
            for i in stride(from: us.count - 1, through: 0, by: -1) {
                guard let kInverse = BN_secure_new() else { throw fail("BN_secure_new") }
                BN_set_flags(kInverse, BN_FLG_CONSTTIME)
                inverses[i] = kInverse
                let ok = i == 0 ? BN_copy(uInverse, t) != nil
                    : BN_mod_mul(uInverse, t, prefix[i - 1], order, context) == 1
                        && BN_mod_mul(t, t, us[i], order, context) == 1
                guard ok, BN_mod_mul_montgomery(kInverse, uInverse, blinds[i], montgomery, context) == 1 else {
                    inverses.forEach { BN_clear_free($0) }
                    throw fail("unblinding")
                }
            }
            defer { rs.removeAll() }
            return zip(rs, inverses).map { Nonce(r: $0, kInverse: $1!) }
        }
    }
}
