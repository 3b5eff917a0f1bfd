import COpenSSL

/// SHA-256 through OpenSSL, with the digest implementation fetched once per process
/// (OpenSSL 3 looks a name-based digest up on every call otherwise).
public enum SHA256 {
    public static let byteCount = 32

    nonisolated(unsafe) static let md: OpaquePointer = {
        guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("OpenSSL has no SHA256") }
        return md
    }()

    /// SHA-256 of `data`.
    public static func hash<C: Collection>(_ data: C) -> [UInt8] where C.Element == UInt8 {
        var out = [UInt8](repeating: 0, count: byteCount)
        _ = withContiguousBytes(data) { EVP_Digest($0.baseAddress, $0.count, &out, nil, md, nil) }
        return out
    }

    /// SHA-256 of the concatenation `a ‖ b`, without building it.
    public static func hash<A: Collection, B: Collection>(_ a: A, _ b: B) -> [UInt8]
    where A.Element == UInt8, B.Element == UInt8 {
        let ctx = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(ctx) }
        EVP_DigestInit_ex(ctx, md, nil)
        update(ctx, a)
        update(ctx, b)
        var out = [UInt8](repeating: 0, count: byteCount)
        EVP_DigestFinal_ex(ctx, &out, nil)
        return out
    }

    static func update<C: Collection>(_ ctx: OpaquePointer?, _ data: C) where C.Element == UInt8 {
        _ = withContiguousBytes(data) { EVP_DigestUpdate(ctx, $0.baseAddress, $0.count) }
    }
}
