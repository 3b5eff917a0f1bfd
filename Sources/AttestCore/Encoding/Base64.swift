/// Base64 (RFC 4648 §4) and base64url (§5) without Foundation.
///
/// Decoding accepts both alphabets, padded or not, and rejects anything else (white space,
/// misplaced padding, non-zero trailing bits are tolerated as Apple's and others' encoders
/// never produce them but the bytes are still unambiguous).
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Decoding table: 0...63 for a digit of either alphabet, 0xFF otherwise.
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in standard.enumerated() { t[Int(c)] = UInt8(i) }
        t[Int(UInt8(ascii: "-"))] = 62
        t[Int(UInt8(ascii: "_"))] = 63
        return t
    }()

    /// Encodes bytes; `url` selects the base64url alphabet without padding.
    public static func encode<C: Collection>(_ bytes: C, url useURL: Bool = false) -> String where C.Element == UInt8 {
        withContiguousBytes(bytes) { encode(buffer: $0, url: useURL) }
    }

    private static func encode(buffer input: UnsafeBufferPointer<UInt8>, url useURL: Bool) -> String {
        let alphabet = useURL ? url : standard
        let full = input.count / 3, rest = input.count % 3
        let length = full * 4 + (rest == 0 ? 0 : useURL ? rest + 1 : 4)
        return String(unsafeUninitializedCapacity: length) { out in
            var o = 0, i = 0
            for _ in 0..<full {
                let b0 = input[i], b1 = input[i + 1], b2 = input[i + 2]
                out[o] = alphabet[Int(b0 >> 2)]
                out[o + 1] = alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)]
                out[o + 2] = alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)]
                out[o + 3] = alphabet[Int(b2 & 0x3F)]
                i += 3
                o += 4
            }
            if rest > 0 {
                let b0 = input[i], b1: UInt8 = rest == 2 ? input[i + 1] : 0
                out[o] = alphabet[Int(b0 >> 2)]
                out[o + 1] = alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)]
                o += 2
                if rest == 2 {
                    out[o] = alphabet[Int((b1 & 0x0F) << 2)]; o += 1
                } else if !useURL {
                    out[o] = UInt8(ascii: "="); o += 1
                }
                if !useURL { out[o] = UInt8(ascii: "="); o += 1 }
            }
            return o
        }
    }

    /// Decodes either alphabet, padded or not; `nil` when the text is not base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(utf8: $0) }
    }

    /// Decodes UTF-8 bytes of base64 text; `nil` when they are not base64.
    public static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var n = input.count
        var pad = 0
        while n > 0, input[n - 1] == UInt8(ascii: "=") { n -= 1; pad += 1 }
        if pad > 2 || n % 4 == 1 { return nil }
        if pad > 0, (n + pad) % 4 != 0 { return nil }
        var valid = true
        let out = table.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: n * 3 / 4) { out, written in
                var acc: UInt32 = 0
                var bits = 0, o = 0
                for i in 0..<n {
                    let v = table[Int(input[i])]
                    if v == 0xFF { valid = false; break }
                    acc = acc << 6 | UInt32(v)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        out[o] = UInt8(truncatingIfNeeded: acc >> UInt32(bits))
                        o += 1
                    }
                }
                written = o
            }
        }
        return valid ? out : nil
    }
}
