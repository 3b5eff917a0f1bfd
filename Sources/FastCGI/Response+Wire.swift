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
        out.append(contentsOf: "Status: \(code) \(HTTPReason.phrase(for: code))\r\n".utf8)
        for header in headers {
            let lower = header.name.lowercased()
            if lower == "content-length" || lower == "status" || header.name.isEmpty { continue }
            Self.appendSanitized(header.name, to: &out)
            out.append(contentsOf: ": ".utf8)
            Self.appendSanitized(header.value, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        if !bodyless { out.append(contentsOf: "Content-Length: \(body.count)\r\n".utf8) }
        out.append(contentsOf: "\r\n".utf8)
        if !bodyless { out.append(contentsOf: body) }
        return out
    }

    private static func appendSanitized(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            out.append(byte == 0x0D || byte == 0x0A ? 0x20 : byte)
        }
    }
}
