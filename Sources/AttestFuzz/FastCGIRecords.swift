/// Builds FastCGI (1.0) record streams as nginx sends them, for seeds and tests.
///
/// ```
/// record  = version u8 (1) | type u8 | requestId u16 BE | contentLength u16 BE | paddingLength u8 | reserved u8
///           | content | padding
/// BEGIN_REQUEST (1) content = role u16 BE (1: responder) | flags u8 | 5 reserved
/// PARAMS (4), STDIN (5)     = a stream: records of up to 65535 bytes, ended by an empty one
/// name-value pair           = nameLength (1 byte < 128, else 4 bytes BE with the top bit set)
///                             | valueLength (same) | name | value
/// ```
public enum FastCGIRecords {
    public static func request(params: [(String, String)], body: [UInt8], requestID: UInt16 = 1) -> [UInt8] {
        var out = record(type: 1, requestID: requestID, content: [0, 1, 0, 0, 0, 0, 0, 0])
        var encoded = [UInt8]()
        for (name, value) in params {
            length(name.utf8.count, &encoded)
            length(value.utf8.count, &encoded)
            encoded += Array(name.utf8) + Array(value.utf8)
        }
        out += stream(type: 4, requestID: requestID, encoded)
        out += stream(type: 5, requestID: requestID, body)
        return out
    }

    static func stream(type: UInt8, requestID: UInt16, _ content: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        var rest = content[...]
        while !rest.isEmpty {
            out += record(type: type, requestID: requestID, content: Array(rest.prefix(65_535)))
            rest = rest.dropFirst(65_535)
        }
        return out + record(type: type, requestID: requestID, content: [])
    }

    static func record(type: UInt8, requestID: UInt16, content: [UInt8]) -> [UInt8] {
        let padding = (8 - content.count % 8) % 8
        return [1, type, UInt8(requestID >> 8), UInt8(requestID & 0xFF), UInt8(content.count >> 8), UInt8(content.count & 0xFF),
                UInt8(padding), 0] + content + [UInt8](repeating: 0, count: padding)
    }

    static func length(_ n: Int, _ out: inout [UInt8]) {
        if n < 128 { out.append(UInt8(n)) } else {
            out += [UInt8(n >> 24 & 0x7F | 0x80), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
    }

    /// The largest name or value length `input` could declare to libfcgi, with records
    /// framed as the protocol says and as libfcgi 2.4.2 frames them (it does not skip
    /// `FCGI_BEGIN_REQUEST`'s padding: `SetReaderType` clears it and those bytes become the
    /// next header): the `FCGI_PARAMS` stream read pair by pair, and every 4-byte length
    /// form anywhere in any record's content (libfcgi also reads name-value pairs from other
    /// records: a third campaign find went through a record with request id 0). 0 when none.
    public static func largestParamLength(_ input: ArraySlice<UInt8>) -> Int {
        max(largestParamLength(input, skipBeginPadding: true), largestParamLength(input, skipBeginPadding: false))
    }

    static func largestParamLength(_ input: ArraySlice<UInt8>, skipBeginPadding: Bool) -> Int {
        var params = [UInt8]()
        var largest = 0
        var cursor = input
        while cursor.count >= 8 {
            let header = Array(cursor.prefix(8))
            let length = Int(header[4]) << 8 | Int(header[5])
            let padding = header[1] == 1 && !skipBeginPadding ? 0 : Int(header[6])
            let content = Array(cursor.dropFirst(8).prefix(length))
            if header[1] == 4 { params += content }
            for i in content.indices.dropLast(3) where content[i] >= 0x80 {
                largest = max(largest, fourByteLength(content, at: i))
            }
            guard cursor.count >= 8 + length + padding else { break }
            cursor = cursor.dropFirst(8 + length + padding)
        }
        var i = 0
        func next() -> Int? {
            guard i < params.count else { return nil }
            if params[i] < 0x80 { i += 1; return Int(params[i - 1]) }
            guard i + 4 <= params.count else { return nil }
            defer { i += 4 }
            return fourByteLength(params, at: i)
        }
        while let name = next(), let value = next() {
            largest = max(largest, name, value)
            i += name + value
        }
        return largest
    }

    /// A name-value pair's 4-byte length: top bit set, 31 bits big-endian.
    static func fourByteLength(_ bytes: [UInt8], at i: Int) -> Int {
        Int(bytes[i] & 0x7F) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
    }
}

