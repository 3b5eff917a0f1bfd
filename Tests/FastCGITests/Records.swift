@testable import FastCGI
import Glibc

/// Record streams as a web server sends them, and the events a parser makes of them.
enum Records {
    /// One record with `content` and the given padding (default: to a multiple of 8).
    static func record(_ type: UInt8, id: UInt16 = 1, _ content: [UInt8] = [], padding: Int? = nil) -> [UInt8] {
        let pad = padding ?? (8 - content.count % 8) % 8
        return [1, type, UInt8(id >> 8), UInt8(id & 0xFF),
                UInt8(content.count >> 8), UInt8(content.count & 0xFF), UInt8(pad), 0]
            + content + [UInt8](repeating: 0, count: pad)
    }

    static func begin(role: UInt16 = 1, id: UInt16 = 1, flags: UInt8 = 0) -> [UInt8] {
        record(1, id: id, [UInt8(role >> 8), UInt8(role & 0xFF), flags, 0, 0, 0, 0, 0])
    }

    static func pairs(_ pairs: [(String, String)]) -> [UInt8] {
        var out = [UInt8]()
        for (name, value) in pairs { NameValuePairs.append(name: name.utf8, value: value.utf8, to: &out) }
        return out
    }

    /// A stream of `type`: records of at most `split` content bytes, then the empty one.
    static func stream(_ type: UInt8, id: UInt16 = 1, _ content: [UInt8], split: Int = 65_535) -> [UInt8] {
        var out = [UInt8]()
        var rest = content[...]
        while !rest.isEmpty {
            out += record(type, id: id, Array(rest.prefix(split)))
            rest = rest.dropFirst(split)
        }
        return out + record(type, id: id)
    }

    /// BEGIN_REQUEST, the PARAMS stream and the STDIN stream of one request.
    static func request(_ params: [(String, String)], body: [UInt8] = [], id: UInt16 = 1) -> [UInt8] {
        begin(id: id) + stream(4, id: id, pairs(params)) + stream(5, id: id, body)
    }

    /// Every event of `bytes` fed `chunk` bytes at a time (body bytes copied out), and the
    /// error that ended it, if any.
    static func events(_ bytes: [UInt8], chunk: Int = .max, parser: RequestParser = RequestParser())
        -> (events: [RequestParser.Event], error: FastCGIError?) {
        var parser = parser
        var events = [RequestParser.Event]()
        var rest = bytes[...]
        repeat {
            parser.consume(rest.prefix(chunk))
            rest = rest.dropFirst(chunk)
            do {
                while let event = try parser.next() {
                    if case .stdin(let body) = event {
                        events.append(.stdin(ArraySlice(Array(body))))
                    } else {
                        events.append(event)
                    }
                }
            } catch {
                return (events, error)
            }
        } while !rest.isEmpty
        return (events, nil)
    }

    /// Adjacent body events joined, so that streams fed in different pieces compare equal.
    static func joined(_ events: [RequestParser.Event]) -> [RequestParser.Event] {
        var out = [RequestParser.Event]()
        for event in events {
            if case .stdin(let more) = event, case .stdin(let body)? = out.last {
                out[out.count - 1] = .stdin(ArraySlice(Array(body) + more))
            } else {
                out.append(event)
            }
        }
        return out
    }

    /// The records in a worker's answer as (type, request id, content); `nil` if malformed.
    static func replies(_ bytes: [UInt8]) -> [(type: UInt8, id: UInt16, content: [UInt8])]? {
        var out = [(type: UInt8, id: UInt16, content: [UInt8])]()
        var cursor = bytes[...]
        while !cursor.isEmpty {
            guard cursor.count >= 8 else { return nil }
            let header = RecordHeader(cursor)
            guard cursor.first == 1, cursor.count >= 8 + header.bodyLength, header.bodyLength % 8 == 0 else {
                return nil
            }
            out.append((header.type, header.requestID, Array(cursor.dropFirst(8).prefix(header.contentLength))))
            cursor = cursor.dropFirst(8 + header.bodyLength)
        }
        return out
    }
}
