import AttestCore

/// Where a support ticket stands; `name` is the SDK's spelling. Stored as u8.
public enum TicketStatus: UInt8, Sendable, CaseIterable {
    case open = 0, awaitingReply, resolved, closed

    public var name: String {
        switch self {
        case .open: return "open"
        case .awaitingReply: return "awaiting_reply"
        case .resolved: return "resolved"
        case .closed: return "closed"
        }
    }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    init(code: UInt8) throws {
        guard let found = Self(rawValue: code) else { throw StoreError(.corrupt, "ticket status \(code)") }
        self = found
    }
}

/// How urgent a support ticket is; `name` is the SDK's spelling. Stored as u8.
public enum TicketPriority: UInt8, Sendable, CaseIterable {
    case low = 0, normal, high, urgent

    public var name: String { String(describing: self) }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    init(code: UInt8) throws {
        guard let found = Self(rawValue: code) else { throw StoreError(.corrupt, "ticket priority \(code)") }
        self = found
    }
}

/// A support ticket of an app, with its message count (the feedback domain keeps it in step
/// in the transaction of each message; `attestctl store check` recounts).
///
/// Key in `tickets`: appID ‖ 0x00 ‖ ticketID (16); `tickets_by_author` lists it under its
/// author (`Transaction.put(_:appID:)` keeps that in step). Layout v1:
/// ```
/// u8 1 | subject string | status u8 (0 open 1 awaiting_reply 2 resolved 3 closed)
///      | priority u8 (0 low 1 normal 2 high 3 urgent) | createdAt i64 | updatedAt i64
///      | messageCount u32 | author bytes (17, FeedbackAuthor) | submitterID string
///      | submitterEmail string ("" = none) | deviceHash string ("" = none)
///      | pushToken string ("" = none) | pushEnvironment string ("" = none)
/// ```
/// A record over `FeatureRequestRecord.maximumEncodedSize` is refused when written.
public struct TicketRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "ticket"

    /// Not part of the value: the key's last 16 bytes.
    public var id: [UInt8]
    public var subject: String
    public var status: TicketStatus
    public var priority: TicketPriority
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var messageCount: UInt32
    /// Who opened it: the only one besides the app's team who may read it.
    public var author: FeedbackAuthor
    /// The client's `submitterId` (client-claimed, never grants anything).
    public var submitterID: String
    public var submitterEmail: String?
    public var deviceHash: String?
    public var pushToken: String?
    public var pushEnvironment: String?

    public init(id: [UInt8], subject: String, status: TicketStatus = .open, priority: TicketPriority = .normal,
                createdAt: Timestamp, updatedAt: Timestamp, messageCount: UInt32 = 0, author: FeedbackAuthor,
                submitterID: String, submitterEmail: String? = nil, deviceHash: String? = nil,
                pushToken: String? = nil, pushEnvironment: String? = nil) {
        self.id = id
        self.subject = subject
        self.status = status
        self.priority = priority
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.messageCount = messageCount
        self.author = author
        self.submitterID = submitterID
        self.submitterEmail = submitterEmail
        self.deviceHash = deviceHash
        self.pushToken = pushToken
        self.pushEnvironment = pushEnvironment
    }

    /// The text bytes this ticket adds to its organization's `FeedbackUsageRecord.bytes`.
    public var countedBytes: UInt64 { UInt64(subject.utf8.count) }

    /// Why this record may not be written (nil: it may).
    public var writeRefusal: String? {
        sizeRefusal(limit: FeatureRequestRecord.maximumEncodedSize)
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(subject)
        w.u8(status.rawValue)
        w.u8(priority.rawValue)
        w.i64(createdAt.seconds)
        w.i64(updatedAt.seconds)
        w.u32(messageCount)
        w.author(author)
        w.string(submitterID)
        w.optionalString(submitterEmail)
        w.optionalString(deviceHash)
        w.optionalString(pushToken)
        w.optionalString(pushEnvironment)
    }

    /// `id` is not part of the value: the transaction sets it from the key.
    public init(from r: inout BinaryReader) throws {
        id = []
        subject = try r.string()
        status = try TicketStatus(code: try r.u8())
        priority = try TicketPriority(code: try r.u8())
        createdAt = Timestamp(seconds: try r.i64())
        updatedAt = Timestamp(seconds: try r.i64())
        messageCount = try r.u32()
        author = try r.author()
        submitterID = try r.string()
        submitterEmail = try r.optionalString()
        deviceHash = try r.optionalString()
        pushToken = try r.optionalString()
        pushEnvironment = try r.optionalString()
    }
}
