import COpenSSL

/// A source of random bytes; injected so tests can be deterministic.
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

/// OpenSSL's CSPRNG (`RAND_bytes`).
public struct SystemRandom: RandomSource {
    public init() {}

    public func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else { fatalError("RAND_bytes failed") }
        return out
    }
}

/// OpenSSL's CSPRNG drawn 4 KiB at a time: the same bytes `SystemRandom` would give, with
/// one `RAND_bytes` call per few hundred small requests (challenge ids are 16 bytes).
/// Not shared between threads: one per worker process.
public final class BufferedRandom: RandomSource, @unchecked Sendable {
    private var pool: [UInt8] = []
    private var offset = 0
    private let chunk: Int

    public init(chunk: Int = 4096) { self.chunk = chunk }

    public func bytes(_ count: Int) -> [UInt8] {
        guard count <= chunk else { return SystemRandom().bytes(count) }
        if offset + count > pool.count {
            pool = SystemRandom().bytes(chunk)
            offset = 0
        }
        defer {
            // Wipe what was handed out so the pool never holds a copy of a past value.
            for i in offset..<(offset + count) { pool[i] = 0 }
            offset += count
        }
        return Array(pool[offset..<(offset + count)])
    }
}
