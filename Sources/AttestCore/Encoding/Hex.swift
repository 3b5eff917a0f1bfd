/// Lower-case hexadecimal, for logs, ids and test vectors.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        // Through the bytes' buffer: a generic loop cost ~530 instructions and a malloc per byte
        // (a token's jti, #12).
        withContiguousBytes(bytes, encode(buffer:))
    }

    private static func encode(buffer bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, b) in bytes.enumerated() {
                out[2 * i] = digits[Int(b >> 4)]
                out[2 * i + 1] = digits[Int(b & 0x0F)]
            }
            return bytes.count * 2
        }
    }

    /// Decodes hex of either case; `nil` for odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
