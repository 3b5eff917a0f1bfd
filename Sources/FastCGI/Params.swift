#if canImport(Glibc)
import Glibc
#endif

/// A request's FastCGI parameters, kept as nginx sent them (the `FCGI_PARAMS` stream's
/// name-value pairs, see `NameValuePairs`): checked once, then looked up by name when read.
///
/// A request carries about twenty params and a responder reads a handful, so none becomes a
/// `String` until it is read. Decoding every one into a dictionary cost about 40 allocations and
/// 25k of the trivial handler's 43k instructions per request (issue #12).
///
/// A name that repeats (nginx 1.22 passes a header sent twice as two `HTTP_*` params) reads as
/// its values joined by `", "`, as RFC 9110 §5.3 prescribes and nginx 1.23+ does itself: the
/// responder never silently picks one of two values (nginx logs the first), and a single-valued
/// header sent twice reads as malformed. Invalid UTF-8 is repaired.
public struct Params: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The pairs, encoded.
    private let encoded: [UInt8]
    /// Where each pair lies in `encoded`, in order: made by the one walk that checks the bytes,
    /// so a lookup compares name lengths instead of decoding every pair again (a walk per
    /// lookup was 950 instructions; a request makes four to eight).
    private let index: [Entry]

    private struct Entry {
        /// Offset of the name in `encoded`; the value follows it.
        let name: Int
        let nameLength: Int
        let valueLength: Int
    }

    /// The params of a whole `FCGI_PARAMS` stream.
    /// - Throws: `protocolViolation` when a length or a name or value runs past the end.
    init(encoded bytes: [UInt8]) throws(FastCGIError) {
        encoded = bytes
        index = try Self.index(bytes)
    }

    /// Params with these names and values (tests, benchmarks, in-process requests). `encode`
    /// writes whole pairs, so the check cannot fail.
    public init(_ params: [String: String]) { try! self.init(encoded: Self.encode(params)) }

    /// In order; a name given twice is combined as on the wire.
    public init(dictionaryLiteral elements: (String, String)...) { try! self.init(encoded: Self.encode(elements)) }

    /// The value of param `name` (repeats combined), or `nil` when nginx did not send it.
    public subscript(name: String) -> String? {
        var found: String? = nil
        var name = name
        name.withUTF8 { key in
            forEachPair { pairName, value in
                guard pairName.count == key.count,
                      key.isEmpty || memcmp(pairName.baseAddress!, key.baseAddress!, key.count) == 0 else { return }
                found = Self.combined(found, String(decoding: value, as: UTF8.self))
            }
        }
        return found
    }

    public var isEmpty: Bool { encoded.isEmpty }

    /// Every param, repeats combined.
    public var dictionary: [String: String] {
        var all: [String: String] = [:]
        forEachPair { name, value in
            let key = String(decoding: name, as: UTF8.self)
            all[key] = Self.combined(all[key], String(decoding: value, as: UTF8.self))
        }
        return all
    }

    public static func == (lhs: Params, rhs: Params) -> Bool { lhs.dictionary == rhs.dictionary }

    public static func == (lhs: Params, rhs: [String: String]) -> Bool { lhs.dictionary == rhs }

    /// A repeated name's values so far, with `value` added (RFC 9110 §5.3: `first, second`; an
    /// empty first value gives way to the next).
    private static func combined(_ earlier: String?, _ value: String) -> String {
        guard let earlier, !earlier.isEmpty else { return value }
        return earlier + ", " + value
    }

    private static func encode(_ pairs: some Sequence<(key: String, value: String)>) -> [UInt8] {
        var bytes = [UInt8]()
        for (name, value) in pairs { NameValuePairs.append(name: name.utf8, value: value.utf8, to: &bytes) }
        return bytes
    }

    /// Each pair's place, from the walk that checks every length against the bytes.
    private static func index(_ bytes: [UInt8]) throws(FastCGIError) -> [Entry] {
        var entries: [Entry] = []
        entries.reserveCapacity(32)  // nginx sends about twenty-five
        let problem = bytes.withUnsafeBufferPointer { all in
            NameValuePairs.walk(all) { name, value in
                entries.append(Entry(name: name.baseAddress! - all.baseAddress!, nameLength: name.count,
                                     valueLength: value.count))
            }
        }
        if let problem { throw FastCGIError(.protocolViolation, problem) }
        return entries
    }

    /// Each pair's name and value, in order, as views into `encoded`.
    @inline(__always)
    private func forEachPair(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        encoded.withUnsafeBufferPointer { all in
            guard let base = all.baseAddress else { return }
            for entry in index {
                body(UnsafeBufferPointer(start: base + entry.name, count: entry.nameLength),
                     UnsafeBufferPointer(start: base + entry.name + entry.nameLength, count: entry.valueLength))
            }
        }
    }
}
