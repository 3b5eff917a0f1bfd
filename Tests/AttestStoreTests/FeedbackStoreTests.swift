import AttestCore
@testable import AttestStore
import Foundation
import Testing

/// Feature requests, votes, comments, tickets and feedback usage on every backend
/// (`StoreConformance` kinds), what `store check` finds in them, and that a backup carries them.
@Suite struct FeedbackStoreTests {
    typealias Kind = StoreConformance.Kind
    let now = Timestamp(seconds: 1_790_000_000)
    /// Two App IDs where one is a prefix of the other: their entries must never mix.
    let app = "ABCDE12345.com.example.app", app2 = "ABCDE12345.com.example.app2"
    let alice = FeedbackAuthor.device(lineageDigest: [UInt8](repeating: 0xA1, count: 16))
    let bob = FeedbackAuthor.apiKey(keyID: "aat_12345678", clientID: "bob")

    static func id(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 16) }

    func request(_ n: UInt8, by author: FeedbackAuthor? = nil, votes: UInt32 = 0, comments: UInt32 = 0)
        -> FeatureRequestRecord {
        FeatureRequestRecord(id: Self.id(n), title: "t\(n)", description: "d\(n)", createdAt: now, updatedAt: now,
                             voteCount: votes, commentCount: comments, author: author ?? alice, submitterID: "s\(n)")
    }

    func vote(_ n: UInt8) -> FeatureVoteRecord { FeatureVoteRecord(voteID: Self.id(n), voterID: "v\(n)", createdAt: now) }

    func comment(_ n: UInt8, at: Timestamp) -> FeedbackCommentRecord {
        FeedbackCommentRecord(id: Self.id(n), createdAt: at, authorType: .user, author: alice, authorID: "a",
                              body: "c\(n)")
    }

    func ticket(_ n: UInt8, by author: FeedbackAuthor, messages: UInt32 = 0) -> TicketRecord {
        TicketRecord(id: Self.id(n), subject: "s\(n)", createdAt: now, updatedAt: now, messageCount: messages,
                     author: author, submitterID: "sub")
    }

    func message(_ n: UInt8, at: Timestamp) -> TicketMessageRecord {
        TicketMessageRecord(id: Self.id(n), createdAt: at, authorType: .admin, author: .admin, authorID: "team",
                            body: "m\(n)")
    }

    @Test(arguments: StoreConformance.kinds) func requestsReadBackPerAppInIdOrder(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try store.write { txn in
            for n: UInt8 in [3, 1, 2] { try txn.put(request(n), appID: app) }
            try txn.put(request(9), appID: app2)
        }
        let (all, other, one, none) = try store.read { txn in
            (try txn.featureRequests(appID: app), try txn.featureRequests(appID: app2),
             try txn.featureRequest(appID: app, id: Self.id(2)), try txn.featureRequest(appID: app, id: Self.id(9)))
        }
        #expect(all == [request(1), request(2), request(3)], "id order; \(app2)'s request is not \(app)'s")
        #expect(other == [request(9)] && one == request(2) && none == nil)
        var changed = request(2)
        (changed.status, changed.mergedInto, changed.pushToken) = (.duplicate, Self.id(1), "tok")
        try store.write { txn in try txn.put(changed, appID: app) }
        #expect(try store.read { try $0.featureRequest(appID: app, id: Self.id(2)) } == changed, "overwritten")
    }

    @Test(arguments: StoreConformance.kinds) func oneVotePerAuthorAndCommentsInTimeOrder(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        let r = Self.id(1)
        let first = try store.write { txn in
            [try txn.putVote(vote(1), requestID: r, author: alice), try txn.putVote(vote(2), requestID: r, author: alice),
             try txn.putVote(vote(3), requestID: r, author: bob), try txn.putVote(vote(4), requestID: Self.id(2), author: bob)]
        }
        #expect(first == [true, false, true, true], "alice's second vote is refused")
        let (votes, count, mine) = try store.read { txn in
            (try txn.votes(requestID: r), try txn.voteCount(requestID: r), try txn.vote(requestID: r, author: alice))
        }
        #expect(mine == vote(1), "the first vote stays")
        #expect(count == 2 && Set(votes) == [FeatureVote(author: alice, vote: vote(1)), FeatureVote(author: bob, vote: vote(3))])
        #expect(votes.map(\.author) == [alice, bob], "author order: kind 1 before kind 2")
        let removed = try store.write { txn in
            [try txn.deleteVote(requestID: r, author: alice), try txn.deleteVote(requestID: r, author: alice)]
        }
        #expect(removed == [true, false])
        #expect(try store.write { try $0.putVote(vote(5), requestID: r, author: alice) }, "voting again after removal")
        #expect(try store.read { try $0.voteCount(requestID: Self.id(2)) } == 1)

        try store.write { txn in
            // Out of order; two in one second (by id); one of another request.
            try txn.put(comment(3, at: now + 60), requestID: r)
            try txn.put(comment(2, at: now), requestID: r)
            try txn.put(comment(1, at: now), requestID: r)
            try txn.put(comment(4, at: now - 3_600), requestID: r)
            try txn.put(comment(5, at: now), requestID: Self.id(2))
        }
        let comments = try store.read { try $0.comments(requestID: r) }
        #expect(comments.map(\.body) == ["c4", "c1", "c2", "c3"], "oldest first")
        #expect(comments.first == comment(4, at: now - 3_600), "id and time come back from the key")
    }

    @Test(arguments: StoreConformance.kinds) func deletingARequestTakesItsVotesAndCommentsOnly(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try store.write { txn in
            for n: UInt8 in [1, 2] {
                try txn.put(request(n), appID: app)
                try txn.putVote(vote(n), requestID: Self.id(n), author: alice)
                try txn.putVote(vote(n), requestID: Self.id(n), author: bob)
                try txn.put(comment(n, at: now), requestID: Self.id(n))
            }
        }
        let deleted = try store.write { txn in
            [try txn.deleteFeatureRequest(appID: app, id: Self.id(1)),
             try txn.deleteFeatureRequest(appID: app, id: Self.id(1))]
        }
        #expect(deleted == [true, false])
        let (requests, gone, goneComments, kept, keptComments) = try store.read { txn in
            (try txn.featureRequests(appID: app).map(\.id), try txn.voteCount(requestID: Self.id(1)),
             try txn.comments(requestID: Self.id(1)).count, try txn.voteCount(requestID: Self.id(2)),
             try txn.comments(requestID: Self.id(2)).count)
        }
        #expect(requests == [Self.id(2)] && gone == 0 && goneComments == 0, "the cascade")
        #expect(kept == 2 && keptComments == 1, "the other request keeps its own")
        #expect(try store.read { try $0.count(.featureVotes) } == 2)
    }

    @Test(arguments: StoreConformance.kinds) func ticketsAreListedUnderTheirAuthor(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try store.write { txn in
            try txn.put(ticket(2, by: alice), appID: app)
            try txn.put(ticket(1, by: alice), appID: app)
            try txn.put(ticket(3, by: bob), appID: app)
            try txn.put(ticket(4, by: alice), appID: app2)
            try txn.put(message(2, at: now + 5), ticketID: Self.id(1))
            try txn.put(message(1, at: now), ticketID: Self.id(1))
        }
        let (mine, bobs, all, other, messages) = try store.read { txn in
            (try txn.tickets(appID: app, author: alice), try txn.tickets(appID: app, author: bob),
             try txn.tickets(appID: app), try txn.tickets(appID: app2, author: alice),
             try txn.messages(ticketID: Self.id(1)))
        }
        #expect(mine == [ticket(1, by: alice), ticket(2, by: alice)], "alice's, in id order, not app2's")
        #expect(bobs == [ticket(3, by: bob)] && other == [ticket(4, by: alice)])
        #expect(all.map(\.id) == [Self.id(1), Self.id(2), Self.id(3)])
        #expect(messages == [message(1, at: now), message(2, at: now + 5)])
        #expect(try store.read { try $0.tickets(appID: app, author: .admin) }.isEmpty)
        // A ticket rewritten with another author moves in the index; a status change keeps it.
        var moved = ticket(2, by: bob)
        moved.status = .resolved
        try store.write { txn in try txn.put(moved, appID: app) }
        #expect(try store.read { try $0.tickets(appID: app, author: alice) }.map(\.id) == [Self.id(1)])
        #expect(try store.read { try $0.tickets(appID: app, author: bob) }.map(\.id) == [Self.id(2), Self.id(3)])
        #expect(try store.read { try $0.count(.ticketsByAuthor) } == 4)
        #expect(try store.read { try $0.ticket(appID: app, id: Self.id(2)) }?.status == .resolved)
    }

    @Test(arguments: StoreConformance.kinds) func keysTheLayoutCannotHoldAreErrors(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        var short = request(1)
        short.id = [1, 2, 3]
        #expect(throws: StoreError(.invalidKey, "")) { try store.write { try $0.put(short, appID: app) } }
        #expect(throws: StoreError(.invalidKey, "")) { try store.read { try $0.featureRequest(appID: app, id: [1]) } }
        #expect(throws: StoreError(.invalidKey, "")) { try store.read { try $0.featureRequests(appID: "T\u{0}x") } }
        #expect(throws: StoreError(.invalidKey, "")) { try store.read { try $0.tickets(appID: "") } }
        #expect(throws: StoreError(.invalidKey, "")) { try store.read { try $0.votes(requestID: []) } }
        #expect(throws: StoreError(.invalidKey, "")) {
            try store.write { try $0.putVote(vote(1), requestID: Self.id(1), author: .device(lineageDigest: [1])) }
        }
        #expect(throws: StoreError(.invalidKey, "")) {
            try store.write { try $0.put(comment(1, at: now), requestID: Self.id(1) + [0]) }
        }
        var badMessage = message(1, at: now)
        badMessage.id = []
        #expect(throws: StoreError(.invalidKey, "")) { try store.write { try $0.put(badMessage, ticketID: Self.id(1)) } }
        #expect(throws: StoreError(.invalidKey, "")) {
            try store.write { try $0.put(ticket(1, by: .apiKey(digest: [])), appID: app) }
        }
        #expect(throws: StoreError(.invalidKey, "")) { try store.write { try $0.put(FeedbackUsageRecord(), org: "") } }
        var big = request(1)
        big.description = String(repeating: "x", count: 70_000)
        #expect(throws: StoreError(.tooLarge, "")) { try store.write { try $0.put(big, appID: app) } }
        #expect(throws: StoreError(.tooLarge, "")) {
            try store.write { try $0.put(request(1), appID: String(repeating: "a", count: 500)) }
        }
        #expect(try store.read { try $0.count(.featureRequests) + $0.count(.tickets) + $0.count(.featureVotes) } == 0,
                "nothing was written")
    }

    /// A consistent store: an organization, its app, and what the domain would write with its counts.
    func fill(_ store: Store) throws {
        try store.write { txn in
            try txn.put(OrgRecord(name: "acme", createdAt: now))
            try txn.put(AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "acme", createdAt: now))
            try txn.put(request(1, votes: 2, comments: 1), appID: app)
            try txn.putVote(vote(1), requestID: Self.id(1), author: alice)
            try txn.putVote(vote(2), requestID: Self.id(1), author: bob)
            try txn.put(comment(1, at: now), requestID: Self.id(1))
            try txn.put(ticket(1, by: alice, messages: 1), appID: app)
            try txn.put(message(1, at: now), ticketID: Self.id(1))
            // "t1" + "d1" + "c1" + "s1" + "m1"
            try txn.put(FeedbackUsageRecord(requests: 1, comments: 1, tickets: 1, messages: 1, bytes: 10), org: "acme")
        }
    }

    @Test(arguments: StoreConformance.kinds) func storeCheckPassesWhatTheAPIWrote(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try fill(store)
        let report = try store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems)) \(report.crossProblems)")
        let checked = report.databases.filter { Self.databases.contains($0.database) }
        #expect(checked.count == 7 && checked.allSatisfy { $0.recordsChecked && $0.entries > 0 },
                "every new database has its check and an entry")
    }

    /// What `store check` must find after a bug (or an edit) damages the databases: counts that
    /// no longer match, orphans each way, index entries that point wrong, records that do not decode.
    @Test(arguments: StoreConformance.kinds) func storeCheckRecountsAndFindsOrphansAndDamage(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try fill(store)
        try store.write { txn in
            // Request 1: a third vote and a second comment not counted; usage not bumped.
            try txn.putVote(vote(3), requestID: Self.id(1), author: .admin)
            try txn.put(comment(2, at: now + 1), requestID: Self.id(1))
            // A vote, a comment and a message of no request or ticket.
            try txn.putVote(vote(4), requestID: Self.id(8), author: alice)
            try txn.put(comment(3, at: now), requestID: Self.id(8))
            try txn.put(message(2, at: now), ticketID: Self.id(8))
            // Ticket 1 loses its index entry; ticket 2 is indexed under bob though alice opened it;
            // an index entry of no ticket.
            _ = try txn.delete(.ticketsByAuthor, Transaction.ticketAuthorPrefix(appID: app, alice) + Self.id(1))
            try txn.put(ticket(2, by: alice), appID: app)
            _ = try txn.delete(.ticketsByAuthor, Transaction.ticketAuthorPrefix(appID: app, alice) + Self.id(2))
            _ = try txn.put(.ticketsByAuthor, Transaction.ticketAuthorPrefix(appID: app, bob) + Self.id(2), [1])
            _ = try txn.put(.ticketsByAuthor, Transaction.ticketAuthorPrefix(appID: app, bob) + Self.id(7), [1])
            // A request and a ticket of an app that does not exist; a damaged request record.
            try txn.put(request(5), appID: app2)
            try txn.put(ticket(5, by: bob), appID: app2)
            _ = try txn.put(.featureRequests, Array(app.utf8) + [0] + Self.id(6), [1, 0, 0])
            // Usage of an organization that does not exist (which stores nothing).
            try txn.put(FeedbackUsageRecord(tickets: 1), org: "ghost")
        }
        let report = try store.check()
        let problems = report.databases.reduce(into: [Database: [String]]()) { $0[$1.database] = $1.problems }
        let hex1 = Hex.encode(Self.id(1)), hex8 = Hex.encode(Self.id(8))
        let requests = problems[.featureRequests] ?? []
        #expect(requests.contains("feature request \(hex1) of app \(app) is counted as having 2 votes; it has 3"),
                "\(requests)")
        #expect(requests.contains("feature request \(hex1) of app \(app) is counted as having 1 comments; it has 2"))
        #expect(requests.contains("a feature request of app \(app2), which does not exist"))
        #expect(requests.contains { $0.contains("does not decode") }, "the damaged request")
        #expect(problems[.featureVotes] == ["a vote of no feature request (\(hex8))"])
        #expect(problems[.featureComments] == ["a comment of no feature request (\(hex8))"])
        #expect(problems[.ticketMessages] == ["a message of no ticket (\(hex8))"])
        let tickets = problems[.tickets] ?? []
        #expect(tickets.contains("ticket \(hex1) of app \(app) is missing from tickets_by_author: its author would not see it"),
                "\(tickets)")
        #expect(tickets.contains("a ticket of app \(app2), which does not exist"))
        let index = problems[.ticketsByAuthor] ?? []
        #expect(index.contains { $0.hasPrefix("a tickets_by_author entry under \(bob) for ticket \(Hex.encode(Self.id(2)))") },
                "\(index)")
        #expect(index.contains("a tickets_by_author entry for no ticket (\(Hex.encode(Self.id(7))) of app \(app))"))
        let usage = problems[.feedbackUsage] ?? []
        #expect(usage.contains("organization acme is counted as storing 1 feature requests; it stores 2"), "\(usage)")
        #expect(usage.contains("organization acme is counted as storing 1 comments; it stores 2"))
        #expect(usage.contains("organization acme is counted as storing 1 tickets; it stores 2"))
        #expect(usage.contains("organization acme is counted as storing 10 bytes of text; it stores 14"))
        #expect(usage.contains("feedback usage of organization ghost, which does not exist"))
        #expect(usage.contains("organization ghost is counted as storing 1 tickets; it stores 0"))
    }

    @Test(arguments: StoreConformance.kinds) func anOrganizationWithoutItsUsageRecordIsNamed(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try fill(store)
        try store.write { txn in _ = try txn.delete(.feedbackUsage, Array("acme".utf8)) }
        let problems = try store.check().databases.reduce(into: [Database: [String]]()) { $0[$1.database] = $1.problems }
        #expect(problems[.featureRequests] == ["a feature request of app \(app), whose organization acme has no "
                                                + "feedback_usage record"])
        #expect(problems[.tickets] == ["a ticket of app \(app), whose organization acme has no feedback_usage record"])
    }

    /// A ticket listed under a subject too (`listTicket`): the subject's devices find it through
    /// `tickets(appID:author:)`; store check accepts the entry beside the author's and counts
    /// tickets against the authors' entries only; a subject entry of no ticket is named, and
    /// nothing but a subject may be listed that way.
    @Test(arguments: StoreConformance.kinds) func aSubjectsEntryListsATicketBesideItsAuthor(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try fill(store)
        let house = FeedbackAuthor.subject(org: "acme", subjectID: "house-17")
        #expect(house != FeedbackAuthor.subject(org: "other", subjectID: "house-17"), "per organization")
        try store.write { try $0.listTicket(Self.id(1), appID: app, under: house) }
        let (listed, isListed, elsewhere) = try store.read { txn in
            (try txn.tickets(appID: app, author: house).map(\.id), try txn.ticketListed(Self.id(1), appID: app, under: house),
             try txn.ticketListed(Self.id(1), appID: app2, under: house))
        }
        #expect(listed == [Self.id(1)] && isListed && !elsewhere)
        let report = try store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems)) \(report.crossProblems)")
        #expect(throws: StoreError(.invalidKey, "")) {
            try store.write { try $0.listTicket(Self.id(1), appID: app, under: bob) }
        }
        try store.write { try $0.listTicket(Self.id(9), appID: app, under: house) }
        let index = try store.check().databases.first { $0.database == .ticketsByAuthor }?.problems ?? []
        #expect(index == ["a tickets_by_author entry for no ticket (\(Hex.encode(Self.id(9))) of app \(app))"], "\(index)")
    }

    /// `attestctl backup` copies each LMDB environment whole (`Store.copyCompacted`), so the
    /// feedback databases travel with it: a store opened on the copy reads them back.
    @Test func aBackupCopyCarriesRequestsAndTickets() throws {
        let f = try StoreConformance.Fixture(.lmdb), store = try f.open()
        try fill(store)
        let copy = f.dir.path + "/copy"
        for env in Database.Environment.allCases {
            try FileManager.default.createDirectory(atPath: copy + "/\(env.rawValue)", withIntermediateDirectories: true)
            try store.copyCompacted(env, to: copy + "/\(env.rawValue)")
        }
        let restored = try Store(directory: copy, options: f.options)
        let (ticket, messages, requests, votes, usage) = try restored.read { txn in
            (try txn.tickets(appID: app, author: alice), try txn.messages(ticketID: Self.id(1)),
             try txn.featureRequests(appID: app), try txn.voteCount(requestID: Self.id(1)),
             try txn.feedbackUsage(org: "acme"))
        }
        #expect(ticket == [self.ticket(1, by: alice, messages: 1)] && messages == [message(1, at: now)])
        #expect(requests == [request(1, votes: 2, comments: 1)] && votes == 2 && usage?.bytes == 10)
        #expect(try restored.check().isConsistent)
    }

    static let databases: [Database] = [.featureRequests, .featureVotes, .featureComments, .tickets, .ticketMessages,
                                        .ticketsByAuthor, .feedbackUsage]
}
