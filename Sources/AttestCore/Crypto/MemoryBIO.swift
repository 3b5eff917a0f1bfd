import COpenSSL

/// Memory BIO helpers for PEM in and out.
enum MemoryBIO {
    /// Runs `body` with a memory BIO holding a copy of `text`.
    static func reading<T>(_ text: String, _ body: (OpaquePointer) throws(AttestError) -> T) throws(AttestError) -> T {
        guard let bio = BIO_new(BIO_s_mem()) else { throw AttestError.openSSL(.crypto, "BIO_new") }
        defer { BIO_free(bio) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(bytes.count) else { throw AttestError.openSSL(.crypto, "BIO_write") }
        return try body(bio)
    }

    /// Runs `body` with a writable BIO and returns what it wrote as text.
    static func writing(_ body: (OpaquePointer) -> Int32) throws(AttestError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw AttestError.openSSL(.crypto, "BIO_new") }
        defer { BIO_free(bio) }
        guard body(bio) == 1 else { throw AttestError.openSSL(.crypto, "PEM write") }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = attest_BIO_get_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)), as: UTF8.self)
    }
}

/// Wraps DER bytes in a PEM block (RFC 7468), 64 columns.
public func pemEncode(_ der: [UInt8], label: String) -> String {
    let b64 = Array(Base64.encode(der).utf8)
    var lines = ["-----BEGIN \(label)-----"]
    var i = 0
    while i < b64.count {
        lines.append(String(decoding: b64[i..<min(i + 64, b64.count)], as: UTF8.self))
        i += 64
    }
    lines.append("-----END \(label)-----")
    return lines.joined(separator: "\n") + "\n"
}
