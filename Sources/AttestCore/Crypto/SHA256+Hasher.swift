import COpenSSL

extension SHA256 {
    /// An incremental SHA-256, for data too large to hold at once (backup files).
    public final class Hasher {
        private let ctx: OpaquePointer

        public init() {
            ctx = EVP_MD_CTX_new()
            EVP_DigestInit_ex(ctx, SHA256.md, nil)
        }

        deinit { EVP_MD_CTX_free(ctx) }

        public func update<C: Collection>(_ data: C) where C.Element == UInt8 {
            SHA256.update(ctx, data)
        }

        /// The digest of everything so far; the hasher is spent afterwards.
        public func finish() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: SHA256.byteCount)
            EVP_DigestFinal_ex(ctx, &out, nil)
            return out
        }
    }
}
