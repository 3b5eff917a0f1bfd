import COpenSSL
import Synchronization

/// HMAC-SHA-256 (RFC 2104) with the keyed inner and outer states computed once.
///
/// Each `authenticate` copies the two prepared digest states into one working context
/// instead of re-keying, which keeps a challenge MAC to a couple of microseconds. The keyed
/// states are immutable after `init` and the working context is
/// taken and put back atomically: safe to share.
public final class HMACSHA256: @unchecked Sendable {
    private let inner: OpaquePointer
    private let outer: OpaquePointer
    /// The working context's address (0: none), reused by every `authenticate` instead of
    /// one allocated per tag.
    private let working = Atomic<Int>(0)

    public init<C: Collection>(key: C) where C.Element == UInt8 {
        var block = [UInt8](repeating: 0, count: 64)
        let keyBytes = key.count > 64 ? SHA256.hash(key) : Array(key)
        block.replaceSubrange(0..<keyBytes.count, with: keyBytes)
        inner = EVP_MD_CTX_new()
        outer = EVP_MD_CTX_new()
        EVP_DigestInit_ex(inner, SHA256.md, nil)
        EVP_DigestInit_ex(outer, SHA256.md, nil)
        let ipad = block.map { $0 ^ 0x36 }, opad = block.map { $0 ^ 0x5C }
        EVP_DigestUpdate(inner, ipad, 64)
        EVP_DigestUpdate(outer, opad, 64)
    }

    deinit {
        EVP_MD_CTX_free(inner)
        EVP_MD_CTX_free(outer)
        EVP_MD_CTX_free(OpaquePointer(bitPattern: working.load(ordering: .acquiring)))
    }

    /// The 32-byte tag of `message`.
    public func authenticate<C: Collection>(_ message: C) -> [UInt8] where C.Element == UInt8 {
        authenticate(message, EmptyCollection())
    }

    /// The tag of the concatenation `a ‖ b`, without building it.
    public func authenticate<A: Collection, B: Collection>(_ a: A, _ b: B) -> [UInt8]
    where A.Element == UInt8, B.Element == UInt8 {
        [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            authenticate(a, b, into: UnsafeMutableBufferPointer(rebasing: digest[0..<32]))
            count = 32
        }
    }

    /// The tag of `a ‖ b` written into `digest` (32 bytes), allocating nothing.
    public func authenticate<A: Collection, B: Collection>(_ a: A, _ b: B,
                                                           into digest: UnsafeMutableBufferPointer<UInt8>)
    where A.Element == UInt8, B.Element == UInt8 {
        precondition(digest.count == 32)
        // Taken out of its slot while in use; a concurrent caller finding it empty uses its own.
        let ctx = OpaquePointer(bitPattern: working.exchange(0, ordering: .acquiring)) ?? EVP_MD_CTX_new()
        EVP_MD_CTX_copy_ex(ctx, inner)
        SHA256.update(ctx, a)
        if !b.isEmpty { SHA256.update(ctx, b) }
        EVP_DigestFinal_ex(ctx, digest.baseAddress, nil)
        EVP_MD_CTX_copy_ex(ctx, outer)
        EVP_DigestUpdate(ctx, digest.baseAddress, 32)
        EVP_DigestFinal_ex(ctx, digest.baseAddress, nil)
        if !working.compareExchange(expected: 0, desired: Int(bitPattern: ctx), ordering: .releasing).exchanged {
            EVP_MD_CTX_free(ctx)
        }
    }
}

/// Compares two byte sequences in time that depends only on their lengths.
/// Arrays and slices take the direct path: the generic loop, not specialised across modules,
/// cost about 480 instructions per byte (a challenge's tag check, 16 bytes, was 1% of a refresh).
public func constantTimeEqual<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
where A.Element == UInt8, B.Element == UInt8 {
    guard a.count == b.count else { return false }
    let direct: Bool?? = a.withContiguousStorageIfAvailable { x in
        b.withContiguousStorageIfAvailable { y in constantTimeEqual(x, y) }
    }
    if let direct = direct ?? nil { return direct }
    var diff: UInt8 = 0
    var i = a.startIndex, j = b.startIndex
    while i != a.endIndex {
        diff |= a[i] ^ b[j]
        a.formIndex(after: &i)
        b.formIndex(after: &j)
    }
    return diff == 0
}

/// `constantTimeEqual` on two buffers of the same length: every byte is read, whatever differs.
private func constantTimeEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    var diff: UInt8 = 0
    for i in 0..<a.count { diff |= a[i] ^ b[i] }
    return diff == 0
}
