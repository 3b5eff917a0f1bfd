import AttestCore
import AttestStore
import Testing

/// The feature-request and ticket records: round trips, their v1 bytes pinned (built field by
/// field from the layouts in the records' doc comments), refusal of damaged bytes, the 64 KiB bound.
@Suite struct FeedbackCodecTests {
    static let now = Timestamp(seconds: 1_790_000_000)
    static let digest = [UInt8](repeating: 0xAB, count: 16), id = [UInt8](0..<16)
    static let device = FeedbackAuthor.device(lineageDigest: digest)

    static let request = FeatureRequestRecord(
        id: [], title: "Dark", description: "Pls", status: .inProgress, createdAt: now, updatedAt: now + 1,
        voteCount: 3, commentCount: 2, author: device, submitterID: "u1", pushToken: "ab", pushEnvironment: nil,
        mergedInto: id)
    static let vote = FeatureVoteRecord(voteID: id, voterID: "v", createdAt: now)
    static let comment = FeedbackCommentRecord(id: [], createdAt: Timestamp(seconds: 0), authorType: .admin,
                                               author: .admin, authorID: "a", body: "Hi", pushToken: nil,
                                               pushEnvironment: "sandbox")
    static let ticket = TicketRecord(id: [], subject: "Help", status: .awaitingReply, priority: .urgent,
                                     createdAt: now, updatedAt: now + 2, messageCount: 1,
                                     author: .apiKey(digest: digest), submitterID: "s", submitterEmail: "e@x",
                                     deviceHash: nil, pushToken: nil, pushEnvironment: nil)
    static let message = TicketMessageRecord(id: [], createdAt: Timestamp(seconds: 0), authorType: .user,
                                             author: device, authorID: "u", body: "ok")
    static let usage = FeedbackUsageRecord(requests: 1, comments: 2, tickets: 3, messages: 4, bytes: 0x1_0000_0005)

    // The layouts' parts, written out by hand.
    static func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func str(_ s: String) -> [UInt8] { u32(UInt32(s.utf8.count)) + Array(s.utf8) }
    static func bytes(_ b: [UInt8]) -> [UInt8] { u32(UInt32(b.count)) + b }
    static let t0: [UInt8] = [0, 0, 0, 0, 0x6A, 0xB1, 0x3B, 0x80]  // 1_790_000_000
    static func t(_ plus: UInt8) -> [UInt8] { Array(t0.dropLast()) + [0x80 + plus] }

    static let vectors: [(name: String, encoded: [UInt8], expected: [UInt8])] = [
        ("request", request.encoded(),
         [1] + str("Dark") + str("Pls") + [3] + t(0) + t(1) + u32(3) + u32(2) + bytes([1] + digest) + str("u1")
            + str("ab") + str("") + bytes(id)),
        ("vote", vote.encoded(), [1] + bytes(id) + str("v") + t(0)),
        ("comment", comment.encoded(),
         [1, 1] + bytes([3] + [UInt8](repeating: 0, count: 16)) + str("a") + str("Hi") + str("") + str("sandbox")),
        ("ticket", ticket.encoded(),
         [1] + str("Help") + [1, 3] + t(0) + t(2) + u32(1) + bytes([2] + digest) + str("s") + str("e@x") + str("")
            + str("") + str("")),
        ("message", message.encoded(), [1, 0] + bytes([1] + digest) + str("u") + str("ok")),
        ("usage", usage.encoded(), [1] + u32(1) + u32(2) + u32(3) + u32(4) + [0, 0, 0, 1, 0, 0, 0, 5]),
    ]

    static func decoders() -> [(String, ([UInt8]) throws -> Any)] {
        [("request", { try FeatureRequestRecord(encoded: $0) }), ("vote", { try FeatureVoteRecord(encoded: $0) }),
         ("comment", { try FeedbackCommentRecord(encoded: $0) }), ("ticket", { try TicketRecord(encoded: $0) }),
         ("message", { try TicketMessageRecord(encoded: $0) }), ("usage", { try FeedbackUsageRecord(encoded: $0) })]
    }

    @Test func version1BytesArePinned() {
        for v in Self.vectors { #expect(Hex.encode(v.encoded) == Hex.encode(v.expected), "\(v.name)") }
    }

    @Test func everyRecordRoundTrips() throws {
        #expect(try FeatureRequestRecord(encoded: Self.request.encoded()) == Self.request)
        #expect(try FeatureVoteRecord(encoded: Self.vote.encoded()) == Self.vote)
        #expect(try FeedbackCommentRecord(encoded: Self.comment.encoded()) == Self.comment)
        #expect(try TicketRecord(encoded: Self.ticket.encoded()) == Self.ticket)
        #expect(try TicketMessageRecord(encoded: Self.message.encoded()) == Self.message)
        #expect(try FeedbackUsageRecord(encoded: Self.usage.encoded()) == Self.usage)
        // Every status and priority by its code, every author kind, no merge, non-ASCII text.
        for status in FeatureRequestStatus.allCases {
            for author in [Self.device, .apiKey(digest: Self.digest), .admin] {
                var request = Self.request
                (request.status, request.author, request.mergedInto, request.title) = (status, author, nil, "Café ✓")
                #expect(try FeatureRequestRecord(encoded: request.encoded()) == request, "\(status) \(author)")
            }
        }
        for (status, priority) in zip(TicketStatus.allCases, TicketPriority.allCases) {
            var ticket = Self.ticket
            (ticket.status, ticket.priority, ticket.deviceHash) = (status, priority, "h")
            #expect(try TicketRecord(encoded: ticket.encoded()) == ticket)
        }
    }

    @Test func namesAreTheSDKs() {
        #expect(FeatureRequestStatus.allCases.map(\.name)
                    == ["pending", "open", "planned", "in_progress", "shipped", "declined", "duplicate"])
        #expect(TicketStatus.allCases.map(\.name) == ["open", "awaiting_reply", "resolved", "closed"])
        #expect(TicketPriority.allCases.map(\.name) == ["low", "normal", "high", "urgent"])
        #expect(FeedbackAuthorType.allCases.map(\.name) == ["user", "admin"])
        #expect(FeatureRequestStatus(name: "in_progress") == .inProgress && FeatureRequestStatus(name: "inProgress") == nil)
        #expect(TicketStatus(name: "awaiting_reply") == .awaitingReply)
    }

    @Test func truncatedTrailingAndUnknownBytesAreRefused() throws {
        for (name, decode) in Self.decoders() {
            let good = try #require(Self.vectors.first { $0.name == name }).encoded
            for cut in 0..<good.count {
                #expect(throws: StoreError.self, "\(name) cut at \(cut)") { _ = try decode(Array(good[..<cut])) }
            }
            #expect(throws: StoreError(.corrupt, ""), "\(name) with a trailing byte") { _ = try decode(good + [0]) }
            #expect(throws: StoreError(.unknownVersion, ""), "\(name) v2") { _ = try decode([2] + good.dropFirst()) }
        }
        // A status past the last; an author of kind 5, of 16 bytes, an admin with a digest; a merge id of 15.
        var bytes = Self.request.encoded()
        let status = 1 + 8 + 7
        #expect(bytes[status] == 3)
        bytes[status] = 7
        #expect(throws: StoreError(.corrupt, "")) { try FeatureRequestRecord(encoded: bytes) }
        bytes = Self.message.encoded()
        bytes[6] = 5  // the author's kind, after u8 1, authorType and the u32 length
        #expect(throws: StoreError(.corrupt, "")) { try TicketMessageRecord(encoded: bytes) }
        bytes = [1, 0] + Self.bytes([1] + Array(Self.digest.dropLast())) + Self.str("u") + Self.str("ok")
        #expect(throws: StoreError(.corrupt, "")) { try TicketMessageRecord(encoded: bytes) }
        bytes = [1, 1] + Self.bytes([3] + [UInt8](repeating: 1, count: 16)) + Self.str("u") + Self.str("ok")
        #expect(throws: StoreError(.corrupt, "")) { try TicketMessageRecord(encoded: bytes) }
        bytes = [1, 2] + Self.bytes([3] + [UInt8](repeating: 0, count: 16)) + Self.str("u") + Self.str("ok")
        #expect(throws: StoreError(.corrupt, ""), "author type 2") { try TicketMessageRecord(encoded: bytes) }
        bytes = Self.request.encoded()
        bytes = Array(bytes.dropLast(20)) + Self.bytes(Array(Self.id.dropLast()))
        #expect(throws: StoreError(.corrupt, "")) { try FeatureRequestRecord(encoded: bytes) }
        bytes = Self.ticket.encoded()
        bytes[1 + 8] = 4  // the status, after u8 1 and the subject
        #expect(throws: StoreError(.corrupt, "")) { try TicketRecord(encoded: bytes) }
    }

    @Test func authorsAreSeventeenBytesAndAPIKeyUsersApart() throws {
        let one = FeedbackAuthor.apiKey(keyID: "aat_12345678", clientID: "user-1")
        let two = FeedbackAuthor.apiKey(keyID: "aat_12345678", clientID: "user-2")
        let other = FeedbackAuthor.apiKey(keyID: "aat_87654321", clientID: "user-1")
        #expect(one != two && one != other, "the client id and the key both separate authors")
        #expect(one == .apiKey(keyID: "aat_12345678", clientID: "user-1"))
        // The digest's input as the layout says: "attestedge-feedback-key:" ‖ keyID ‖ 0x00 ‖ clientID.
        let input = Array("attestedge-feedback-key:aat_12345678".utf8) + [0] + Array("user-1".utf8)
        #expect(try one.bytes() == [2] + Array(SHA256.hash(input).prefix(16)))
        let lineage = LineageKey.fingerprint("fp", appID: "T.app")
        #expect(try FeedbackAuthor.device(lineage).bytes() == [1] + lineage.digest)
        for author in [one, .device(lineage), .admin] {
            #expect(try FeedbackAuthor(bytes: author.bytes()) == author)
        }
        #expect(throws: StoreError(.invalidKey, "")) { try FeedbackAuthor.device(lineageDigest: [1, 2]).bytes() }
    }

    @Test func aRecordOver64KiBIsRefusedAtWriting() {
        var request = Self.request
        #expect(request.writeRefusal == nil)
        request.description = String(repeating: "é", count: 32_000)  // 64,000 bytes of UTF-8
        #expect(request.writeRefusal == nil, "\(request.encoded().count) bytes")
        request.description += String(repeating: "x", count: 1_500)
        #expect(request.writeRefusal?.contains("at most 65536") == true, "\(request.encoded().count) bytes")
        var merged = Self.request
        merged.mergedInto = [1]
        #expect(merged.writeRefusal?.contains("not 16") == true)
        var comment = Self.comment, message = Self.message, ticket = Self.ticket
        comment.body = String(repeating: "x", count: 65_536)
        message.body = comment.body
        ticket.subject = comment.body
        #expect(comment.writeRefusal != nil && message.writeRefusal != nil && ticket.writeRefusal != nil)
        var vote = Self.vote
        vote.voteID = [1]
        #expect(vote.writeRefusal?.contains("not 16") == true)
    }
}
