import COpenSSL

/// HMAC-SHA-256 (RFC 2104) with the keyed inner and outer states computed once.
///
/// Each `authenticate` copies the two prepared digest states instead of re-keying, which
/// keeps a challenge MAC to a couple of microseconds. Immutable after `init`: safe to share.
public final class HMACSHA256: @unchecked Sendable {
    private let inner: OpaquePointer
    private let outer: OpaquePointer

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
    }

    /// The 32-byte tag of `message`.
    public func authenticate<C: Collection>(_ message: C) -> [UInt8] where C.Element == UInt8 {
        authenticate(message, EmptyCollection())
    }

    /// The tag of the concatenation `a ‖ b`, without building it.
    public func authenticate<A: Collection, B: Collection>(_ a: A, _ b: B) -> [UInt8] where A.Element == UInt8, B.Element == UInt8 {
        let ctx = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(ctx) }
        var digest = [UInt8](repeating: 0, count: 32)
        EVP_MD_CTX_copy_ex(ctx, inner)
        SHA256.update(ctx, a)
        if !b.isEmpty { SHA256.update(ctx, b) }
        EVP_DigestFinal_ex(ctx, &digest, nil)
        EVP_MD_CTX_copy_ex(ctx, outer)
        EVP_DigestUpdate(ctx, digest, 32)
        EVP_DigestFinal_ex(ctx, &digest, nil)
        return digest
    }
}

/// Compares two byte sequences in time that depends only on their lengths.
/// Arrays and slices take the direct path: the generic loop, not specialised across modules,
/// cost about 480 instructions per byte (a challenge's tag check, 16 bytes, was 1% of a refresh).
public func constantTimeEqual<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
where A.Element == UInt8, B.Element == UInt8 {
    guard a.count == b.count else { return false }
    let direct: Bool?? = a.withContiguousStorageIfAvailable { x in b.withContiguousStorageIfAvailable { y in constantTimeEqual(x, y) } }
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
