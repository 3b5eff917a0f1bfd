/// Builds FastCGI (1.0) record streams as nginx sends them, for seeds and tests, and reads
/// back what a worker answers.
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
        return [1, type, UInt8(requestID >> 8), UInt8(requestID & 0xFF), UInt8(content.count >> 8),
                UInt8(content.count & 0xFF), UInt8(padding), 0] + content + [UInt8](repeating: 0, count: padding)
    }

    static func length(_ n: Int, _ out: inout [UInt8]) {
        if n < 128 { out.append(UInt8(n)) } else {
            out += [UInt8(n >> 24 & 0x7F | 0x80), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
    }

    /// One record as the worker sent it back.
    public struct Reply: Equatable {
        public var type: UInt8
        public var requestID: UInt16
        public var content: [UInt8]
    }

    /// The records of a worker's answer, or `nil` when `bytes` are not whole, well-formed
    /// records: version 1, content padded to a multiple of 8 with zero bytes, nothing after
    /// the last record.
    public static func replies(_ bytes: [UInt8]) -> [Reply]? {
        var out = [Reply]()
        var cursor = bytes[...]
        while !cursor.isEmpty {
            guard cursor.count >= 8, cursor.first == 1 else { return nil }
            let header = Array(cursor.prefix(8))
            let length = Int(header[4]) << 8 | Int(header[5])
            let padding = Int(header[6])
            guard (length + padding) % 8 == 0, padding < 8, cursor.count >= 8 + length + padding else { return nil }
            let content = Array(cursor.dropFirst(8).prefix(length))
            guard cursor.dropFirst(8 + length).prefix(padding).allSatisfy({ $0 == 0 }) else { return nil }
            out.append(Reply(type: header[1], requestID: UInt16(header[2]) << 8 | UInt16(header[3]), content: content))
            cursor = cursor.dropFirst(8 + length + padding)
        }
        return out
    }
}
