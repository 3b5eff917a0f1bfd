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
    /// Calls `body` with each pair's name and value (slices of `bytes`), in order.
    /// - Throws: `protocolViolation` when a length or a name or value runs past the end.
    static func decode(_ bytes: ArraySlice<UInt8>,
                       _ body: (ArraySlice<UInt8>, ArraySlice<UInt8>) -> Void) throws(FastCGIError) {
        var cursor = bytes
        while !cursor.isEmpty {
            let nameLength = try length(&cursor)
            let valueLength = try length(&cursor)
            guard nameLength <= cursor.count, valueLength <= cursor.count - nameLength else {
                throw FastCGIError(.protocolViolation, "a name-value pair declares \(nameLength) + \(valueLength) bytes; \(cursor.count) remain")
            }
            let nameEnd = cursor.startIndex + nameLength
            let valueEnd = nameEnd + valueLength
            body(cursor[cursor.startIndex..<nameEnd], cursor[nameEnd..<valueEnd])
            cursor = cursor[valueEnd...]
        }
    }

    /// The request's params from the whole `FCGI_PARAMS` stream. Invalid UTF-8 is repaired.
    /// A name that repeats (nginx 1.22 passes a header sent twice as two `HTTP_*` params) is
    /// combined into `first, second` as RFC 9110 §5.3 prescribes and nginx 1.23+ does
    /// itself: the responder never silently picks one of two values (nginx logs the first),
    /// and a single-valued header sent twice reads as malformed.
    static func params(_ bytes: ArraySlice<UInt8>) throws(FastCGIError) -> [String: String] {
        var params: [String: String] = [:]
        params.reserveCapacity(32)
        try decode(bytes) { name, value in
            params[String(decoding: name, as: UTF8.self), default: ""].combine(String(decoding: value, as: UTF8.self))
        }
        return params
    }

    /// Appends one pair, each length in the shortest form.
    static func append(name: some Collection<UInt8>, value: some Collection<UInt8>, to out: inout [UInt8]) {
        appendLength(name.count, to: &out)
        appendLength(value.count, to: &out)
        out.append(contentsOf: name)
        out.append(contentsOf: value)
    }

    private static func length(_ cursor: inout ArraySlice<UInt8>) throws(FastCGIError) -> Int {
        guard let first = cursor.first else {
            throw FastCGIError(.protocolViolation, "a name-value pair ends inside its lengths")
        }
        if first < 0x80 {
            cursor = cursor.dropFirst()
            return Int(first)
        }
        guard cursor.count >= 4 else { throw FastCGIError(.protocolViolation, "a 4-byte length is cut short") }
        let i = cursor.startIndex
        let value = Int(first & 0x7F) << 24 | Int(cursor[i + 1]) << 16 | Int(cursor[i + 2]) << 8 | Int(cursor[i + 3])
        cursor = cursor.dropFirst(4)
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

extension String {
    /// Appends a repeated field's value, comma-separated (RFC 9110 §5.3).
    fileprivate mutating func combine(_ value: String) {
        self = isEmpty ? value : self + ", " + value
    }
}
