import AttestCore

/// A message of a support ticket (its opener's first message included), by its author or the app's team.
///
/// Key in `ticket_messages`: ticketID (16) ‖ createdAt i64 BE (8) ‖ messageID (16), so a
/// ticket's messages are one prefix scan in time order. Layout v1:
/// ```
/// u8 1 | authorType u8 (0 user 1 admin) | author bytes (17, FeedbackAuthor) | authorID string | body string
/// ```
/// A record over `FeatureRequestRecord.maximumEncodedSize` is refused when written.
public struct TicketMessageRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "ticket message"

    /// Not part of the value: the key's last 16 bytes.
    public var id: [UInt8]
    /// Not part of the value: the key's 8 bytes after the ticket id.
    public var createdAt: Timestamp
    public var authorType: FeedbackAuthorType
    public var author: FeedbackAuthor
    /// The client's `authorId` (client-claimed, never grants anything).
    public var authorID: String
    public var body: String

    public init(id: [UInt8], createdAt: Timestamp, authorType: FeedbackAuthorType, author: FeedbackAuthor,
                authorID: String, body: String) {
        self.id = id
        self.createdAt = createdAt
        self.authorType = authorType
        self.author = author
        self.authorID = authorID
        self.body = body
    }

    /// The text bytes this message adds to its organization's `FeedbackUsageRecord.bytes`.
    public var countedBytes: UInt64 { UInt64(body.utf8.count) }

    /// Why this record may not be written (nil: it may).
    public var writeRefusal: String? {
        sizeRefusal(limit: FeatureRequestRecord.maximumEncodedSize)
    }

    public func encode(into w: inout BinaryWriter) {
        w.u8(authorType.rawValue)
        w.author(author)
        w.string(authorID)
        w.string(body)
    }

    /// `id` and `createdAt` are not part of the value: the transaction sets them from the key.
    public init(from r: inout BinaryReader) throws {
        id = []
        createdAt = Timestamp(seconds: 0)
        authorType = try FeedbackAuthorType(code: try r.u8())
        author = try r.author()
        authorID = try r.string()
        body = try r.string()
    }
}
