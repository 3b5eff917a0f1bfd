import COpenSSL

extension AttestError {
    /// An error for a failed OpenSSL call, carrying OpenSSL's own first error code and text.
    /// Drains OpenSSL's thread-local error queue so later calls start clean.
    static func openSSL(_ code: Code, _ what: String, file: String = #fileID, line: Int = #line) -> AttestError {
        let first = ERR_get_error()
        while ERR_get_error() != 0 {}
        guard first != 0 else { return AttestError(code, what, file: file, line: line) }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(first, &buffer, buffer.count)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return AttestError(code, "\(what) (OpenSSL \(text))", file: file, line: line)
    }
}

/// Clears OpenSSL's error queue after a failure that is an expected answer (an invalid
/// signature), so it does not leak into a later error message.
@inline(__always) func clearOpenSSLErrors() { ERR_clear_error() }
