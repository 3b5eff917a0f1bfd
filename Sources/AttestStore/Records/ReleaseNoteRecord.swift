import AttestCore

/// A release note of an app (What's New): shown to devices that updated to `version` or
/// later from before it, once `publishAt` has passed.
///
/// Key in `release_notes`: appID ‖ 0x00 ‖ noteID (16 bytes, a UUID's). Layout v1:
/// ```
/// u8 1 | version string | title string | body string | publishAt i64 | createdAt i64 | updatedAt i64
/// ```
public struct ReleaseNoteRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "release note"

    /// Not part of the value: the key's last 16 bytes.
    public var id: [UInt8]
    public var version: String
    public var title: String
    public var body: String
    public var publishAt: Timestamp
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(id: [UInt8], version: String, title: String, body: String, publishAt: Timestamp,
                createdAt: Timestamp, updatedAt: Timestamp) {
        self.id = id
        self.version = version
        self.title = title
        self.body = body
        self.publishAt = publishAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(version)
        w.string(title)
        w.string(body)
        w.i64(publishAt.seconds)
        w.i64(createdAt.seconds)
        w.i64(updatedAt.seconds)
    }

    /// `id` is not part of the value: the transaction sets it from the key.
    public init(from r: inout BinaryReader) throws {
        id = []
        version = try r.string()
        title = try r.string()
        body = try r.string()
        publishAt = Timestamp(seconds: try r.i64())
        createdAt = Timestamp(seconds: try r.i64())
        updatedAt = Timestamp(seconds: try r.i64())
    }
}
