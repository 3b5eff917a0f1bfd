extension Response {
    /// The CGI response bytes: status line, headers, `Content-Length`, blank line, body.
    ///
    /// - A status outside 100...599 is written as 500.
    /// - `Status` and `Content-Length` headers given by the responder are dropped: the status
    ///   comes from `status` and the length from `body`.
    /// - CR and LF inside names and values become spaces (no header injection).
    /// - 1xx, 204 and 304 responses carry neither `Content-Length` nor a body (RFC 9110).
    func serialized() -> [UInt8] {
        let code = (100...599).contains(status) ? status : 500
        let bodyless = code < 200 || code == 204 || code == 304
        var out: [UInt8] = []
        out.reserveCapacity(64 + headers.count * 40 + (bodyless ? 0 : body.count))
        // Written as bytes: interpolated lines cost eight string allocations per response.
        out.append(contentsOf: "Status: ".utf8)
        Self.appendDecimal(code, to: &out)
        out.append(UInt8(ascii: " "))
        var phrase = HTTPReason.phrase(for: code)
        phrase.withUTF8 { out.append(contentsOf: $0) }
        out.append(contentsOf: "\r\n".utf8)
        for header in headers {
            if header.name.isEmpty || Self.isComputed(header.name) { continue }
            Self.appendSanitized(header.name, to: &out)
            out.append(contentsOf: ": ".utf8)
            Self.appendSanitized(header.value, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        if !bodyless {
            out.append(contentsOf: "Content-Length: ".utf8)
            Self.appendDecimal(body.count, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        if !bodyless { out.append(contentsOf: body) }
        return out
    }

    /// The digits of `n` (not negative).
    private static func appendDecimal(_ n: Int, to out: inout [UInt8]) {
        var divisor = 1
        while divisor <= n / 10 { divisor *= 10 }
        var rest = n
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `Content-Length` or `Status`, in any case: written from `body` and `status` instead.
    private static func isComputed(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == 14 || utf8.count == 6 else { return false }
        let target = utf8.count == 14 ? "content-length".utf8 : "status".utf8
        return zip(utf8, target).allSatisfy { byte, lower in
            (byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) == lower
        }
    }

    private static func appendSanitized(_ text: String, to out: inout [UInt8]) {
        let start = out.count
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
        // Copied whole, then CR and LF replaced: a byte-by-byte append cost as much again
        // as the rest of a trivial response's serialisation.
        out.withUnsafeMutableBufferPointer { buffer in
            for i in start..<buffer.count where buffer[i] == 0x0D || buffer[i] == 0x0A { buffer[i] = 0x20 }
        }
    }
}
