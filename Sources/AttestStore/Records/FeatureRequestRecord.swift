import AttestCore

/// Where a feature request stands; `name` is the SDK's spelling. Stored as u8.
public enum FeatureRequestStatus: UInt8, Sendable, CaseIterable {
    case pending = 0, open, planned, inProgress, shipped, declined, duplicate

    public var name: String {
        switch self {
        case .pending: return "pending"
        case .open: return "open"
        case .planned: return "planned"
        case .inProgress: return "in_progress"
        case .shipped: return "shipped"
        case .declined: return "declined"
        case .duplicate: return "duplicate"
        }
    }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    init(code: UInt8) throws {
        guard let found = Self(rawValue: code) else { throw StoreError(.corrupt, "feature request status \(code)") }
        self = found
    }
}

/// A feature request of an app, with its vote and comment counts (the feedback domain keeps
/// them in step in the transaction of each vote and comment; `attestctl store check` recounts).
///
/// Key in `feature_requests`: appID ‖ 0x00 ‖ requestID (16). Layout v1:
/// ```
/// u8 1 | title string | description string
///      | status u8 (0 pending 1 open 2 planned 3 in_progress 4 shipped 5 declined 6 duplicate)
///      | createdAt i64 | updatedAt i64 | voteCount u32 | commentCount u32
///      | author bytes (17, FeedbackAuthor) | submitterID string
///      | pushToken string ("" = none) | pushEnvironment string ("" = none)
///      | mergedInto bytes (0 = none, or the request id of 16)
/// ```
/// A record over `maximumEncodedSize` is refused when written; reads are not.
public struct FeatureRequestRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "feature request"
    /// 64 KiB: the SDK's longest title and description (200 + 5,000 characters) fit many times.
    public static let maximumEncodedSize = 64 * 1024

    /// Not part of the value: the key's last 16 bytes.
    public var id: [UInt8]
    public var title: String
    public var description: String
    public var status: FeatureRequestStatus
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var voteCount: UInt32
    public var commentCount: UInt32
    /// Who submitted it (access control).
    public var author: FeedbackAuthor
    /// The client's `submitterId` (client-claimed, never grants anything).
    public var submitterID: String
    public var pushToken: String?
    public var pushEnvironment: String?
    /// The request this one was merged into (status `duplicate`).
    public var mergedInto: [UInt8]?

    public init(id: [UInt8], title: String, description: String, status: FeatureRequestStatus = .pending,
                createdAt: Timestamp, updatedAt: Timestamp, voteCount: UInt32 = 0, commentCount: UInt32 = 0,
                author: FeedbackAuthor, submitterID: String, pushToken: String? = nil,
                pushEnvironment: String? = nil, mergedInto: [UInt8]? = nil) {
        self.id = id
        self.title = title
        self.description = description
        self.status = status
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.voteCount = voteCount
        self.commentCount = commentCount
        self.author = author
        self.submitterID = submitterID
        self.pushToken = pushToken
        self.pushEnvironment = pushEnvironment
        self.mergedInto = mergedInto
    }

    /// The text bytes this request adds to its organization's `FeedbackUsageRecord.bytes`.
    public var countedBytes: UInt64 { UInt64(title.utf8.count + description.utf8.count) }

    /// Why this record may not be written (nil: it may).
    public var writeRefusal: String? {
        if let mergedInto, mergedInto.count != 16 {
            return "a feature request merged into an id of \(mergedInto.count) bytes, not 16"
        }
        return sizeRefusal(limit: Self.maximumEncodedSize)
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(title)
        w.string(description)
        w.u8(status.rawValue)
        w.i64(createdAt.seconds)
        w.i64(updatedAt.seconds)
        w.u32(voteCount)
        w.u32(commentCount)
        w.author(author)
        w.string(submitterID)
        w.optionalString(pushToken)
        w.optionalString(pushEnvironment)
        w.data(mergedInto ?? [])
    }

    /// `id` is not part of the value: the transaction sets it from the key.
    public init(from r: inout BinaryReader) throws {
        id = []
        title = try r.string()
        description = try r.string()
        status = try FeatureRequestStatus(code: try r.u8())
        createdAt = Timestamp(seconds: try r.i64())
        updatedAt = Timestamp(seconds: try r.i64())
        voteCount = try r.u32()
        commentCount = try r.u32()
        author = try r.author()
        submitterID = try r.string()
        pushToken = try r.optionalString()
        pushEnvironment = try r.optionalString()
        let merged = try r.data()
        guard merged.isEmpty || merged.count == 16 else {
            throw StoreError(.corrupt, "feature request merged into an id of \(merged.count) bytes")
        }
        mergedInto = merged.isEmpty ? nil : merged
    }
}
