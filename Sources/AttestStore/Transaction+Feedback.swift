import AttestCore

/// Feature requests, their votes and their comments (the records have the layouts).
///
/// ```
/// feature_requests  appID ‖ 0x00 ‖ requestID (16)                        → FeatureRequestRecord
/// feature_votes     requestID (16) ‖ author (17)                          → FeatureVoteRecord
/// feature_comments  requestID (16) ‖ createdAt i64 BE (8) ‖ commentID (16) → FeedbackCommentRecord
/// ```
/// Ids are random UUID bytes the feedback domain chooses. One vote per author and request:
/// the key holds the author. The store keeps no counts: the domain bumps a request's
/// `voteCount` and `commentCount` and its organization's `FeedbackUsageRecord` in the
/// transaction of each change; `attestctl store check` recounts.
extension Transaction {
    /// A request, comment, ticket or message id as keys hold it.
    /// - Throws: `StoreError(.invalidKey)` unless it is 16 bytes.
    static func feedbackID(_ id: [UInt8], _ what: String) throws -> [UInt8] {
        guard id.count == 16 else { throw StoreError(.invalidKey, "a \(what) id of \(id.count) bytes, not 16") }
        return id
    }

    /// `appID ‖ 0x00 ‖ id (16)`. - Throws: `StoreError(.invalidKey)` for an App ID the keys
    /// cannot hold or an id that is not 16 bytes; `StoreError(.tooLarge)` past `maximumKeySize`.
    static func appItemKey(appID: String, _ id: [UInt8], _ what: String) throws -> [UInt8] {
        let key = try appPrefix(appID) + feedbackID(id, what)
        guard key.count <= maximumKeySize else {
            throw StoreError(.tooLarge, "\(what) key of \(key.count) bytes with its App ID; at most \(maximumKeySize)")
        }
        return key
    }

    /// `parentID (16) ‖ createdAt i64 BE (8) ‖ id (16)`: a comment's or message's key.
    static func timedKey(_ parent: [UInt8], _ createdAt: Timestamp, _ id: [UInt8], _ what: String) throws -> [UInt8] {
        try feedbackID(parent, what) + BigEndian.bytes(createdAt.seconds) + feedbackID(id, what)
    }

    /// The records under `parent (16)` in `db` (`feature_comments`, `ticket_messages`), in
    /// time order, with the creation time and id their keys hold.
    func timedRecords(_ db: Database, _ parent: [UInt8], _ what: String,
                      _ visit: (_ createdAt: Timestamp, _ id: [UInt8], _ value: [UInt8]) throws -> Void) throws {
        try scanPrefix(db, Self.feedbackID(parent, what)) { rest, value in
            guard rest.count == 24 else { throw StoreError(.corrupt, "\(what) key of \(16 + rest.count) bytes") }
            let at = Timestamp(seconds: Int64(bitPattern: BigEndian.uint64(rest)))
            try visit(at, Array(rest.suffix(16)), value)
        }
    }

    /// The greatest id under `parent (16) ‖ createdAt` in `db` (`feature_comments`,
    /// `ticket_messages`): a new comment or message of the same second takes an id above it, so
    /// a thread lists in the order it was written (one prefix scan of that second).
    public func lastTimedID(_ db: Database, parent: [UInt8], at createdAt: Timestamp) throws -> [UInt8]? {
        var last: [UInt8]?
        try scanPrefix(db, Self.feedbackID(parent, "feedback thread") + BigEndian.bytes(createdAt.seconds)) { rest, _ in
            if rest.count == 16 { last = Array(rest) }
        }
        return last
    }

    // MARK: requests

    public func featureRequest(appID: String, id: [UInt8]) throws -> FeatureRequestRecord? {
        guard let bytes = try get(.featureRequests, Self.appItemKey(appID: appID, id, "feature request")) else {
            return nil
        }
        var request = try FeatureRequestRecord(encoded: bytes)
        request.id = id
        return request
    }

    /// Every request of the app, in id order (bytewise).
    public func featureRequests(appID: String) throws -> [FeatureRequestRecord] {
        var found = [FeatureRequestRecord]()
        try scanPrefix(.featureRequests, Self.appPrefix(appID)) { rest, value in
            guard rest.count == 16 else { throw StoreError(.corrupt, "feature request id of \(rest.count) bytes") }
            var request = try FeatureRequestRecord(encoded: value)
            request.id = Array(rest)
            found.append(request)
        }
        return found
    }

    /// - Throws: `StoreError(.tooLarge)` for a record over `FeatureRequestRecord.maximumEncodedSize`,
    ///   `StoreError(.invalidKey)` for an id, author digest or `mergedInto` the layout cannot hold.
    public func put(_ request: FeatureRequestRecord, appID: String) throws {
        let key = try Self.appItemKey(appID: appID, request.id, "feature request")
        _ = try request.author.bytes()
        if let refusal = request.writeRefusal { throw StoreError(.tooLarge, refusal) }
        try put(.featureRequests, key, request.encoded())
    }

    /// Removes the request with its votes and comments (prefix scans); `false` when there was
    /// no request (its votes and comments, if any were left, are removed all the same).
    @discardableResult
    public func deleteFeatureRequest(appID: String, id: [UInt8]) throws -> Bool {
        let key = try Self.appItemKey(appID: appID, id, "feature request")
        for db in [Database.featureVotes, .featureComments] {
            var keys = [[UInt8]]()
            try scanPrefix(db, id) { rest, _ in keys.append(id + rest) }
            for key in keys { try delete(db, key) }
        }
        return try delete(.featureRequests, key)
    }

    // MARK: votes

    public func vote(requestID: [UInt8], author: FeedbackAuthor) throws -> FeatureVoteRecord? {
        try get(.featureVotes, Self.feedbackID(requestID, "feature request") + author.bytes())
            .map(FeatureVoteRecord.init(encoded:))
    }

    /// Stores the author's vote; with `noOverwrite` (a new vote) an existing vote is left as it
    /// is and the result is `false`: the author had already voted (atomic on every backend).
    /// - Throws: `StoreError(.invalidKey)` for a request id or author digest that is not 16
    ///   bytes, `StoreError(.tooLarge)` for a vote id that is not 16 bytes or a record over 64 KiB.
    @discardableResult
    public func putVote(_ vote: FeatureVoteRecord, requestID: [UInt8], author: FeedbackAuthor,
                        noOverwrite: Bool = true) throws -> Bool {
        let key = try Self.feedbackID(requestID, "feature request") + author.bytes()
        if let refusal = vote.writeRefusal { throw StoreError(.tooLarge, refusal) }
        return try put(.featureVotes, key, vote.encoded(), noOverwrite: noOverwrite)
    }

    /// `false` when the author had not voted.
    @discardableResult
    public func deleteVote(requestID: [UInt8], author: FeedbackAuthor) throws -> Bool {
        try delete(.featureVotes, Self.feedbackID(requestID, "feature request") + author.bytes())
    }

    /// The request's votes, in author order (bytewise).
    public func votes(requestID: [UInt8]) throws -> [FeatureVote] {
        var found = [FeatureVote]()
        try scanPrefix(.featureVotes, Self.feedbackID(requestID, "feature request")) { rest, value in
            found.append(FeatureVote(author: try FeedbackAuthor(bytes: rest), vote: try FeatureVoteRecord(encoded: value)))
        }
        return found
    }

    /// How many votes the request has, counted (no record decoded).
    public func voteCount(requestID: [UInt8]) throws -> Int {
        var n = 0
        try scanPrefix(.featureVotes, Self.feedbackID(requestID, "feature request")) { _, _ in n += 1 }
        return n
    }

    // MARK: comments

    /// The request's comments, oldest first (same second: by id).
    public func comments(requestID: [UInt8]) throws -> [FeedbackCommentRecord] {
        var found = [FeedbackCommentRecord]()
        try timedRecords(.featureComments, requestID, "feedback comment") { at, id, value in
            var comment = try FeedbackCommentRecord(encoded: value)
            (comment.createdAt, comment.id) = (at, id)
            found.append(comment)
        }
        return found
    }

    /// - Throws: `StoreError(.invalidKey)` for an id or author digest that is not 16 bytes,
    ///   `StoreError(.tooLarge)` for a record over 64 KiB.
    public func put(_ comment: FeedbackCommentRecord, requestID: [UInt8]) throws {
        let key = try Self.timedKey(requestID, comment.createdAt, comment.id, "feedback comment")
        _ = try comment.author.bytes()
        if let refusal = comment.writeRefusal { throw StoreError(.tooLarge, refusal) }
        try put(.featureComments, key, comment.encoded())
    }
}
