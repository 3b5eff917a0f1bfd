/// A value stored in the store: a compact binary layout whose first byte is its version.
///
/// Decoding a version this build does not know fails with `.unknownVersion` instead of
/// guessing; a newer build keeps decoders for the versions before it.
public protocol StoreRecord: Sendable {
    /// The layout version `encoded()` writes.
    static var currentVersion: UInt8 { get }
    /// Name for error messages.
    static var recordName: String { get }
    func encode(into writer: inout BinaryWriter)
    /// Reads the fields of `reader.version`, which the caller has checked is known.
    init(from reader: inout BinaryReader) throws
    /// Versions `init(from:)` can read.
    static var knownVersions: ClosedRange<UInt8> { get }
}

extension StoreRecord {
    public static var knownVersions: ClosedRange<UInt8> { 1...currentVersion }

    public func encoded() -> [UInt8] {
        var writer = BinaryWriter(version: Self.currentVersion)
        encode(into: &writer)
        return writer.bytes
    }

    /// Why this record may not be written because it encodes to more than `limit` bytes
    /// (`writeRefusal`'s size check); nil when it fits.
    public func sizeRefusal(limit: Int) -> String? {
        let size = encoded().count
        return size > limit ? "\(Self.recordName) encodes to \(size) bytes; at most \(limit) are stored" : nil
    }

    public init(encoded bytes: [UInt8]) throws {
        var reader = try BinaryReader(bytes, record: Self.recordName)
        guard Self.knownVersions.contains(reader.version) else {
            throw StoreError(.unknownVersion, "\(Self.recordName) record version \(reader.version); "
                                                  + "this build reads \(Self.knownVersions)")
        }
        try self.init(from: &reader)
        try reader.finish(Self.recordName)
    }
}
