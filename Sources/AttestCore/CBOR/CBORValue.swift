/// One decoded CBOR data item. Byte strings are slices of the input (no copy).
public indirect enum CBORValue: Hashable, Sendable {
    case unsigned(UInt64)
    /// A negative integer `-1 - n`, stored as `n` so the whole major-type-1 range fits.
    case negative(UInt64)
    case bytes(ArraySlice<UInt8>)
    case text(String)
    case array([CBORValue])
    /// Entries in encoded order; keys are `.unsigned`, `.negative` or `.text` and unique.
    case map([CBORMapEntry])
    case bool(Bool)
    case null
    case undefined

    /// The value as a signed integer, when it is an integer that fits.
    public var intValue: Int64? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int64.max) ? Int64(n) : nil
        case .negative(let n): return n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: return nil
        }
    }

    public var bytesValue: ArraySlice<UInt8>? {
        if case .bytes(let b) = self { return b }
        return nil
    }

    public var textValue: String? {
        if case .text(let t) = self { return t }
        return nil
    }

    public var arrayValue: [CBORValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var mapEntries: [CBORMapEntry]? {
        if case .map(let m) = self { return m }
        return nil
    }

    /// The value stored under a text key of a map.
    public subscript(text key: String) -> CBORValue? {
        mapEntries?.first { $0.key == .text(key) }?.value
    }

    /// The value stored under an integer key of a map.
    public subscript(int key: Int64) -> CBORValue? {
        mapEntries?.first { $0.key.intValue == key }?.value
    }
}

/// A key and value of a CBOR map.
public struct CBORMapEntry: Hashable, Sendable {
    public var key: CBORValue
    public var value: CBORValue

    public init(key: CBORValue, value: CBORValue) {
        self.key = key
        self.value = value
    }
}
