import AttestCore

/// One author's vote for a feature request (one per author: the key holds the author).
///
/// Key in `feature_votes`: requestID (16) ‖ author (17, FeedbackAuthor). Layout v1:
/// ```
/// u8 1 | voteID bytes (16) | voterID string | createdAt i64
/// ```
public struct FeatureVoteRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "feature vote"

    /// The vote's id as the SDK is answered (random UUID bytes).
    public var voteID: [UInt8]
    /// The client's `voterId` (client-claimed, never grants anything).
    public var voterID: String
    public var createdAt: Timestamp

    public init(voteID: [UInt8], voterID: String, createdAt: Timestamp) {
        self.voteID = voteID
        self.voterID = voterID
        self.createdAt = createdAt
    }

    /// Why this record may not be written (nil: it may).
    public var writeRefusal: String? {
        if voteID.count != 16 { return "a vote id of \(voteID.count) bytes, not 16" }
        return sizeRefusal(limit: FeatureRequestRecord.maximumEncodedSize)
    }

    public func encode(into w: inout BinaryWriter) {
        w.data(voteID)
        w.string(voterID)
        w.i64(createdAt.seconds)
    }

    public init(from r: inout BinaryReader) throws {
        voteID = try r.data()
        guard voteID.count == 16 else { throw StoreError(.corrupt, "a vote id of \(voteID.count) bytes") }
        voterID = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
    }
}

/// A vote as `Transaction.votes(requestID:)` reads it: whose (the key) and the record.
public struct FeatureVote: Hashable, Sendable {
    public var author: FeedbackAuthor
    public var vote: FeatureVoteRecord

    public init(author: FeedbackAuthor, vote: FeatureVoteRecord) {
        self.author = author
        self.vote = vote
    }
}
