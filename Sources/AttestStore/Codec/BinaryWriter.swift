/// Builds a record's bytes: fixed-width big-endian integers and length-prefixed fields.
///
/// ```
/// u8 | u16 BE | u32 BE | u64 BE
/// bytes  = u32 length ‖ bytes
/// string = u32 length ‖ UTF-8
/// ```
public struct BinaryWriter {
    public private(set) var bytes: [UInt8] = []

    /// Room for a typical record (a device is about 200 bytes) reserved at once.
    public init(version: UInt8) {
        bytes.reserveCapacity(256)
        bytes.append(version)
    }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    public mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }

    public mutating func data<C: Collection>(_ v: C) where C.Element == UInt8 {
        u32(UInt32(v.count))
        bytes.append(contentsOf: v)
    }

    /// Copied from the string's UTF-8 buffer, without an intermediate array.
    public mutating func string(_ v: String) {
        var v = v
        v.withUTF8 { data($0) }
    }
}

/// Reads what `BinaryWriter` wrote; every read checks the bytes remain first.
/// Reads by offset into the record's bytes: no slices, so no reference counting per field
/// (a device record, read twice by every refresh, has 20 fields).
public struct BinaryReader {
    private let bytes: [UInt8]
    private var offset = 1
    public let version: UInt8

    /// Starts after the version byte.
    public init(_ bytes: [UInt8], record: String) throws {
        guard let v = bytes.first else { throw StoreError(.corrupt, "\(record) record is empty") }
        version = v
        self.bytes = bytes
    }

    public var isAtEnd: Bool { offset == bytes.count }

    /// The range of the next `n` bytes, consumed.
    private mutating func take(_ n: Int) throws -> Range<Int> {
        let left = bytes.count - offset
        guard n >= 0, left >= n else { throw StoreError(.corrupt, "record truncated: \(n) bytes wanted, \(left) left") }
        defer { offset += n }
        return offset..<(offset + n)
    }

    private mutating func uint(_ width: Int) throws -> UInt64 {
        let range = try take(width)
        var v: UInt64 = 0
        for i in range { v = v << 8 | UInt64(bytes[i]) }
        return v
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

    public mutating func data() throws -> [UInt8] { Array(bytes[try take(Int(try u32()))]) }

    /// Every byte not read yet, consumed (a layout whose last field has no length).
    public mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// Stored strings are nearly always ASCII, which needs no validation: decoding those
    /// directly costs a fraction of the generic validating initialiser (callgrind: about 2% of
    /// a refresh's instructions went to validating the two device reads' strings).
    public mutating func string() throws -> String {
        let range = try take(Int(try u32()))
        let s = bytes.withUnsafeBufferPointer { all -> String? in
            let raw = UnsafeBufferPointer(rebasing: all[range])
            return raw.allSatisfy { $0 < 0x80 }
                ? String(decoding: raw, as: UTF8.self) : String(validating: raw, as: UTF8.self)
        }
        guard let s else { throw StoreError(.corrupt, "string is not UTF-8") }
        return s
    }

    /// Fails unless every byte was read: a record with extra bytes is a layout this build
    /// does not understand.
    public func finish(_ record: String) throws {
        guard isAtEnd else { throw StoreError(.corrupt, "\(record) record has \(bytes.count - offset) unread bytes") }
    }
}
