/// FastCGI name-value pairs (FastCGI 1.0 §3.4): the content of the `FCGI_PARAMS` stream and
/// of `FCGI_GET_VALUES` / `FCGI_GET_VALUES_RESULT` records.
///
/// ```
/// pair   = nameLength | valueLength | name | value
/// length = u8 0...127 | u32 BE with the top bit set, 31 bits (128...2^31-1)
/// ```
/// A declared length is compared with the bytes actually present before anything is sliced,
/// and nothing is ever allocated from it: the bytes are the bound.
enum NameValuePairs {
    /// Calls `body` with each pair's name and value (views into `bytes`), in order.
    /// - Throws: `protocolViolation` when a length or a name or value runs past the end.
    static func decode(_ bytes: ArraySlice<UInt8>,
                       _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) throws(FastCGIError) {
        if let problem = bytes.withUnsafeBufferPointer({ walk($0, body) }) {
            throw FastCGIError(.protocolViolation, problem)
        }
    }

    /// Calls `body` with each pair in `bytes`, in order, until one runs past the end; returns
    /// what was wrong then, `nil` when every byte was a whole pair. `Params` indexes a
    /// request's pairs with it.
    @inline(__always)
    static func walk(_ bytes: UnsafeBufferPointer<UInt8>,
                     _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        var at = 0
        while at < bytes.count {
            guard let nameLength = length(bytes, &at), let valueLength = length(bytes, &at) else {
                return "a name-value pair ends inside its lengths"
            }
            guard nameLength <= bytes.count - at, valueLength <= bytes.count - at - nameLength else {
                return "a name-value pair declares \(nameLength) + \(valueLength) bytes; \(bytes.count - at) remain"
            }
            // Both ranges were just checked against the bytes: views without slicing again.
            body(UnsafeBufferPointer(start: base + at, count: nameLength),
                 UnsafeBufferPointer(start: base + at + nameLength, count: valueLength))
            at += nameLength + valueLength
        }
        return nil
    }

    /// The request's params from the whole `FCGI_PARAMS` stream (checked here, read when
    /// looked up; repeated names and invalid UTF-8 as `Params` says).
    static func params(_ bytes: ArraySlice<UInt8>) throws(FastCGIError) -> Params {
        try Params(encoded: Array(bytes))
    }

    /// Appends one pair, each length in the shortest form.
    static func append(name: some Collection<UInt8>, value: some Collection<UInt8>, to out: inout [UInt8]) {
        appendLength(name.count, to: &out)
        appendLength(value.count, to: &out)
        out.append(contentsOf: name)
        out.append(contentsOf: value)
    }

    /// The length at `at` (1- or 4-byte form), moving past it; `nil` when cut short.
    @inline(__always)
    private static func length(_ bytes: UnsafeBufferPointer<UInt8>, _ at: inout Int) -> Int? {
        guard at < bytes.count else { return nil }
        let first = bytes[at]
        if first < 0x80 {
            at += 1
            return Int(first)
        }
        guard bytes.count - at >= 4 else { return nil }
        let value = Int(first & 0x7F) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        at += 4
        return value
    }

    private static func appendLength(_ n: Int, to out: inout [UInt8]) {
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            out += [UInt8(truncatingIfNeeded: n >> 24) | 0x80, UInt8(truncatingIfNeeded: n >> 16),
                    UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
        }
    }
}
