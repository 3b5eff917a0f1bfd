/// Builds a record's bytes: fixed-width big-endian integers and length-prefixed fields.
///
/// ```
/// u8 | u16 BE | u32 BE | u64 BE
/// bytes  = u32 length ‖ bytes
/// string = u32 length ‖ UTF-8
/// ```
public struct BinaryWriter {
    public private(set) var bytes: [UInt8] = []

    public init(version: UInt8) { bytes.append(version) }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    public mutating func u16(_ v: UInt16) { append(UInt64(v), 2) }
    public mutating func u32(_ v: UInt32) { append(UInt64(v), 4) }
    public mutating func u64(_ v: UInt64) { append(v, 8) }
    public mutating func i64(_ v: Int64) { append(UInt64(bitPattern: v), 8) }

    public mutating func data<C: Collection>(_ v: C) where C.Element == UInt8 {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    public mutating func string(_ v: String) { data(Array(v.utf8)) }

    private mutating func append(_ v: UInt64, _ width: Int) {
        for i in stride(from: width - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: v >> (UInt64(i) * 8))) }
    }
}

/// Reads what `BinaryWriter` wrote; every read checks the bytes remain first.
public struct BinaryReader {
    private var cursor: ArraySlice<UInt8>
    public let version: UInt8

    /// Starts after the version byte.
    public init(_ bytes: [UInt8], record: String) throws {
        guard let v = bytes.first else { throw StoreError(.corrupt, "\(record) record is empty") }
        version = v
        cursor = bytes.dropFirst()
    }

    public var isAtEnd: Bool { cursor.isEmpty }

    private mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
        guard cursor.count >= n else { throw StoreError(.corrupt, "record truncated: \(n) bytes wanted, \(cursor.count) left") }
        defer { cursor = cursor.dropFirst(n) }
        return cursor.prefix(n)
    }

    private mutating func uint(_ width: Int) throws -> UInt64 {
        try take(width).reduce(0) { $0 << 8 | UInt64($1) }
    }

    public mutating func u8() throws -> UInt8 { UInt8(try uint(1)) }
    public mutating func bool() throws -> Bool {
        let b = try u8()
        guard b <= 1 else { throw StoreError(.corrupt, "boolean byte \(b)") }
        return b == 1
    }
    public mutating func u16() throws -> UInt16 { UInt16(try uint(2)) }
    public mutating func u32() throws -> UInt32 { UInt32(try uint(4)) }
    public mutating func u64() throws -> UInt64 { try uint(8) }
    public mutating func i64() throws -> Int64 { Int64(bitPattern: try uint(8)) }

    public mutating func data() throws -> [UInt8] { Array(try take(Int(try u32()))) }

    /// Stored strings are nearly always ASCII, which needs no validation: decoding those
    /// directly costs a fraction of the generic validating initialiser (callgrind: about 2% of
    /// a refresh's instructions went to validating the two device reads' strings).
    public mutating func string() throws -> String {
        let raw = try take(Int(try u32()))
        let s = raw.withUnsafeBufferPointer { bytes -> String? in
            bytes.allSatisfy { $0 < 0x80 } ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
        }
        guard let s else { throw StoreError(.corrupt, "string is not UTF-8") }
        return s
    }

    /// Fails unless every byte was read: a record with extra bytes is a layout this build
    /// does not understand.
    public func finish(_ record: String) throws {
        guard cursor.isEmpty else { throw StoreError(.corrupt, "\(record) record has \(cursor.count) unread bytes") }
    }
}
