/// Reads CBOR data items from a slice cursor.
///
/// Every item starts with a head byte: major type (high 3 bits) and additional information
/// (low 5 bits: the value itself below 24, or 1/2/4/8 big-endian bytes that follow for
/// 24...27). Lengths are checked against the bytes that remain before anything is sliced.
public struct CBORReader {
    public let limits: CBOR.Limits
    private var totalItems = 0

    public init(limits: CBOR.Limits = .appAttest) { self.limits = limits }

    /// Decodes exactly one item; bytes after it are an error.
    public static func decode(_ bytes: ArraySlice<UInt8>,
                              limits: CBOR.Limits = .appAttest) throws(AttestError) -> CBORValue {
        var cursor = bytes
        let value = try decodeFirst(&cursor, limits: limits)
        guard cursor.isEmpty else {
            throw AttestError(.cborMalformed, "\(cursor.count) trailing bytes after the top-level item")
        }
        return value
    }

    /// Decodes one item and advances `cursor` past it, leaving whatever follows.
    public static func decodeFirst(_ cursor: inout ArraySlice<UInt8>,
                                   limits: CBOR.Limits = .appAttest) throws(AttestError) -> CBORValue {
        var reader = CBORReader(limits: limits)
        return try reader.readItem(&cursor, depth: 1)
    }

    private mutating func readItem(_ cursor: inout ArraySlice<UInt8>, depth: Int) throws(AttestError) -> CBORValue {
        totalItems += 1
        guard totalItems <= limits.maxTotalItems else {
            throw AttestError(.cborLimitExceeded, "more than \(limits.maxTotalItems) items")
        }
        guard let head = cursor.popFirst() else {
            throw AttestError(.cborMalformed, "unexpected end of input")
        }
        let major = head >> 5
        let info = head & 0x1F
        switch major {
        case 0:
            return .unsigned(try readArgument(info, &cursor))
        case 1:
            return .negative(try readArgument(info, &cursor))
        case 2:
            return .bytes(try readString(info, &cursor))
        case 3:
            let raw = try readString(info, &cursor)
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw AttestError(.cborMalformed, "text string is not UTF-8")
            }
            return .text(text)
        case 4:
            let count = try readCount(info, &cursor, depth: depth)
            var items = [CBORValue]()
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try readItem(&cursor, depth: depth + 1)) }
            return .array(items)
        case 5:
            let count = try readCount(info, &cursor, depth: depth)
            var entries = [CBORMapEntry]()
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let key = try readItem(&cursor, depth: depth + 1)
                switch key {
                case .unsigned, .negative, .text: break
                default: throw AttestError(.cborMalformed, "map key is not an integer or text")
                }
                if entries.contains(where: { $0.key == key }) {
                    throw AttestError(.cborMalformed, "duplicate map key")
                }
                entries.append(CBORMapEntry(key: key, value: try readItem(&cursor, depth: depth + 1)))
            }
            return .map(entries)
        case 6:
            throw AttestError(.cborMalformed, "tags are not supported")
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 31: throw AttestError(.cborMalformed, "unexpected break")
            default: throw AttestError(.cborMalformed, "unsupported simple value or float (\(info))")
            }
        }
    }

    /// The head's argument: the value itself, or the 1, 2, 4 or 8 bytes that follow.
    private func readArgument(_ info: UInt8, _ cursor: inout ArraySlice<UInt8>) throws(AttestError) -> UInt64 {
        let width: Int
        switch info {
        case 0..<24: return UInt64(info)
        case 24: width = 1
        case 25: width = 2
        case 26: width = 4
        case 27: width = 8
        case 31: throw AttestError(.cborMalformed, "indefinite length is not supported")
        default: throw AttestError(.cborMalformed, "reserved additional information \(info)")
        }
        guard cursor.count >= width else { throw AttestError(.cborMalformed, "truncated argument") }
        var value: UInt64 = 0
        for byte in cursor.prefix(width) { value = value << 8 | UInt64(byte) }
        cursor = cursor.dropFirst(width)
        return value
    }

    private func readString(_ info: UInt8, _ cursor: inout ArraySlice<UInt8>) throws(AttestError) -> ArraySlice<UInt8> {
        let length = try readArgument(info, &cursor)
        guard length <= UInt64(limits.maxStringLength) else {
            throw AttestError(.cborLimitExceeded, "string of \(length) bytes exceeds \(limits.maxStringLength)")
        }
        guard UInt64(cursor.count) >= length else {
            throw AttestError(.cborMalformed, "string of \(length) bytes but only \(cursor.count) remain")
        }
        let value = cursor.prefix(Int(length))
        cursor = cursor.dropFirst(Int(length))
        return value
    }

    private func readCount(_ info: UInt8, _ cursor: inout ArraySlice<UInt8>, depth: Int) throws(AttestError) -> Int {
        guard depth <= limits.maxDepth else {
            throw AttestError(.cborLimitExceeded, "nesting deeper than \(limits.maxDepth)")
        }
        let count = try readArgument(info, &cursor)
        guard count <= UInt64(limits.maxContainerCount) else {
            throw AttestError(.cborLimitExceeded, "container of \(count) items exceeds \(limits.maxContainerCount)")
        }
        // Every element takes at least one byte: a cheap bound before allocating.
        guard count <= UInt64(cursor.count) else {
            throw AttestError(.cborMalformed, "container of \(count) items but only \(cursor.count) bytes remain")
        }
        return Int(count)
    }
}
