import AttestConfig
import AttestCore
@testable import AttestStore
import Foundation
import Testing

/// `attestctl feedback` and `attestctl tickets` end to end: the built binary on a fresh data
/// directory whose store holds what devices wrote (seeded as the pool stores it), its tables,
/// its --json, what it changes and its refusals.
@Suite("FeedbackCommand") struct FeedbackCommandTests {
    static let app = FlagsCommandTests.app
    static let otherApp = "OTHER12345.com.other.app"
    static let request = "6F9619FF-8B86-4D01-B42D-00CF4FC964F1"
    static let request2 = "6F9619FF-8B86-4D01-B42D-00CF4FC964F2"
    static let ticket = "6F9619FF-8B86-4D01-B42D-00CF4FC964F3"
    static let foreign = "6F9619FF-8B86-4D01-B42D-00CF4FC964F4"
    static let unknown = "6F9619FF-8B86-4D01-B42D-00CF4FC964FF"

    /// A UUID's 16 bytes.
    static func id(_ text: String) -> [UInt8] {
        let hex = Array(text.replacingOccurrences(of: "-", with: ""))
        return stride(from: 0, to: 32, by: 2).map { UInt8(String(hex[$0...$0 + 1]), radix: 16)! }
    }

    static func device(_ n: UInt8) -> FeedbackAuthor { .device(lineageDigest: [UInt8](repeating: n, count: 16)) }

    /// Two requests (votes: A and B on the first, A and C on the second) and a ticket in the
    /// app, a request in another app of the same organization.
    /// With `ATTEST_TEST_STORE=postgres` the data directory is moved to a fresh schema of
    /// `ATTEST_TEST_POSTGRES_URL` (as the service fixtures are), so the commands run on PostgreSQL.
    static func seeded() throws -> FlagsCommandTests.CLI {
        let cli = try FlagsCommandTests.CLI()
        let env = ProcessInfo.processInfo.environment
        if env["ATTEST_TEST_STORE"] == "postgres", let url = env["ATTEST_TEST_POSTGRES_URL"], !url.isEmpty {
            let schema = "s_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let admin = PGConnection(url: url)
            try admin.ensure()
            try admin.command("CREATE SCHEMA \(schema)")
            _ = try cli.ok(["config", "set", "store.postgres.url", url + " options='-c search_path=\(schema)'"])
            _ = try cli.ok(["config", "set", "store.backend", "postgres"])
            _ = try cli.ok(["org", "add", "acme", "--tier", "pro"])
            _ = try cli.ok(["app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app"])
        }
        _ = try cli.ok(["app", "add", "--org", "acme", "--team", "OTHER12345", "--bundle", "com.other.app"])
        let data = DataDirectory(cli.data)
        let store = try Store(directory: data.storeDirectory, options: try data.loadConfiguration().storeOptions)
        let t = Timestamp(seconds: 1_780_000_000)
        try store.write([.durable]) { txn in
            for (id, title, voters) in [(request, "Dark mode", [device(1), device(2)]),
                                        (request2, "Dark theme", [device(1), device(3)])] {
                try txn.put(FeatureRequestRecord(id: Self.id(id), title: title, description: "Please add it soon.",
                                                 createdAt: t, updatedAt: t, voteCount: UInt32(voters.count),
                                                 author: device(1), submitterID: "sub-1"), appID: app)
                for v in voters {
                    try txn.putVote(FeatureVoteRecord(voteID: Self.id(unknown), voterID: "", createdAt: t),
                                    requestID: Self.id(id), author: v)
                }
            }
            try txn.put(FeatureRequestRecord(id: Self.id(foreign), title: "Elsewhere", description: "Another app's.",
                                             createdAt: t, updatedAt: t, author: device(1), submitterID: ""),
                        appID: otherApp)
            try txn.put(TicketRecord(id: Self.id(ticket), subject: "Cannot log in", createdAt: t, updatedAt: t,
                                     messageCount: 1, author: device(1), submitterID: "user-42",
                                     submitterEmail: "a@example.com"), appID: app)
            try txn.put(TicketMessageRecord(id: Self.id(unknown), createdAt: t, authorType: .user, author: device(1),
                                            authorID: "user-42", body: "The button does nothing."),
                        ticketID: Self.id(ticket))
            try txn.put(FeedbackUsageRecord(requests: 3, tickets: 1, messages: 1, bytes: 0), org: "acme")
        }
        return cli
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test("feedback: list, show, status, reply and merge")
    func feedbackRoundTrip() throws {
        let cli = try Self.seeded()
        let a = ["--app", Self.app]
        let table = try cli.ok(["feedback", "list"] + a)
        #expect(table.contains("ID") && table.contains("VOTES") && table.contains(Self.request)
                && table.contains("Dark theme") && !table.contains("Elsewhere"), "\(table)")
        _ = try cli.ok(["feedback", "status"] + a + [Self.request.lowercased(), "--status", "planned"])
        let planned = try #require(try Self.json(try cli.ok(["feedback", "list"] + a + ["--status", "planned",
                                                                                          "--json"])) as? [[String: Any]])
        #expect(planned.map { $0["id"] as? String } == [Self.request] && planned[0]["vote_count"] as? Int == 2)
        let reply = try cli.ok(["feedback", "reply"] + a + [Self.request, "--body", "Coming in 2.1."])
        #expect(reply.contains("admin comment"))
        let shown = try #require(try Self.json(try cli.ok(["feedback", "show"] + a + [Self.request, "--json"]))
            as? [String: Any])
        let comments = try #require(shown["comments"] as? [[String: Any]])
        #expect(shown["status"] as? String == "planned" && shown["comment_count"] as? Int == 1
                && comments.first?["author_type"] as? String == "admin" && comments.first?["author_id"] as? String == "cli"
                && comments.first?["body"] as? String == "Coming in 2.1.")
        let text = try cli.ok(["feedback", "show"] + a + [Self.request])
        #expect(text.contains("status: planned") && text.contains("votes: 2") && text.contains("admin")
                && text.contains("Coming in 2.1."), "\(text)")

        let merged = try cli.ok(["feedback", "merge"] + a + [Self.request, "--into", Self.request2])
        #expect(merged.contains("now 3 votes"), "A voted for both and counts once: \(merged)")
        let after = try #require(try Self.json(try cli.ok(["feedback", "show"] + a + [Self.request, "--json"]))
            as? [String: Any])
        #expect(after["status"] as? String == "duplicate" && after["merged_into"] as? String == Self.request2
                && after["vote_count"] as? Int == 0)

        let data = DataDirectory(cli.data)
        let config = try data.loadConfiguration()
        #expect((config.storeBackend == .postgres) == (ProcessInfo.processInfo.environment["ATTEST_TEST_STORE"] == "postgres"))
        let store = try Store(directory: data.storeDirectory, options: config.storeOptions)
        let (usage, events, votes) = try store.read { txn in
            (try txn.feedbackUsage(org: "acme"), try txn.outbox().map(\.event.event),
             try txn.voteCount(requestID: Self.id(Self.request2)))
        }
        #expect(usage?.comments == 1 && usage?.bytes == UInt64("Coming in 2.1.".utf8.count), "the CLI bumps the counters")
        #expect(votes == 3)
        #expect(events.filter { $0 == "feedback.status_changed" }.count == 2 && events.contains("feedback.commented"))
    }

    @Test("tickets: list, show, reply, status and priority")
    func ticketsRoundTrip() throws {
        let cli = try Self.seeded()
        let a = ["--app", Self.app]
        let table = try cli.ok(["tickets", "list"] + a)
        #expect(table.contains("PRIORITY") && table.contains(Self.ticket) && table.contains("Cannot log in")
                && table.contains("normal"), "\(table)")
        _ = try cli.ok(["tickets", "reply"] + a + [Self.ticket, "--body", "Please update to 2.1."])
        let shown = try #require(try Self.json(try cli.ok(["tickets", "show"] + a + [Self.ticket, "--json"]))
            as? [String: Any])
        let messages = try #require(shown["messages"] as? [[String: Any]])
        #expect(shown["status"] as? String == "awaiting_reply" && shown["message_count"] as? Int == 2
                && messages.map { $0["author_type"] as? String } == ["user", "admin"])
        _ = try cli.ok(["tickets", "priority"] + a + [Self.ticket, "--priority", "high"])
        let status = try cli.ok(["tickets", "status"] + a + [Self.ticket.lowercased(), "--status", "resolved"])
        #expect(status.contains("awaiting_reply → resolved"), "\(status)")
        let listed = try #require(try Self.json(try cli.ok(["tickets", "list"] + a + ["--json"])) as? [[String: Any]])
        #expect(listed.first?["status"] as? String == "resolved" && listed.first?["priority"] as? String == "high")
        #expect(try cli.ok(["tickets", "list"] + a + ["--status", "open"]).contains("no tickets"))
        let text = try cli.ok(["tickets", "show"] + a + [Self.ticket])
        #expect(text.contains("priority: high") && text.contains("admin:") && text.contains("Please update to 2.1."))
    }

    @Test("feedback and tickets: unknown ids, bad statuses, another app's ids")
    func refusals() throws {
        let cli = try Self.seeded()
        let a = ["--app", Self.app]
        for args in [["feedback", "show"] + a + [Self.unknown], ["feedback", "status"] + a + [Self.unknown, "--status", "open"],
                     ["feedback", "reply"] + a + ["not-a-uuid", "--body", "x"],
                     ["feedback", "merge"] + a + [Self.request, "--into", Self.unknown],
                     ["tickets", "show"] + a + [Self.unknown], ["tickets", "reply"] + a + [Self.request, "--body", "x"],
                     ["feedback", "show"] + a + [Self.foreign],
                     ["feedback", "merge"] + a + [Self.request, "--into", Self.foreign],
                     ["feedback", "list", "--app", "NOPE123456.com.none"]] {
            let (status, _, err) = try cli.run(args)
            #expect(status == 1 && err.contains("No "), "\(args.joined(separator: " ")): \(status) \(err)")
        }
        let (bad, _, badErr) = try cli.run(["feedback", "status"] + a + [Self.request, "--status", "done"])
        #expect(bad == 2 && badErr.contains("in_progress"), "\(badErr)")
        let (badTicket, _, ticketErr) = try cli.run(["tickets", "status"] + a + [Self.ticket, "--status", "pending"])
        #expect(badTicket == 2 && ticketErr.contains("awaiting_reply"))
        let (badPriority, _, _) = try cli.run(["tickets", "priority"] + a + [Self.ticket, "--priority", "asap"])
        #expect(badPriority == 2)
        let (empty, _, emptyErr) = try cli.run(["feedback", "reply"] + a + [Self.request, "--body", "  "])
        #expect(empty == 1 && emptyErr.contains("body"), "\(emptyErr)")
        let (missing, _, _) = try cli.run(["feedback", "show"] + a)
        #expect(missing == 2, "no id is a usage error")
        let other = try cli.ok(["feedback", "list", "--app", Self.otherApp])
        #expect(other.contains("Elsewhere") && !other.contains("Dark mode"))
        let shown = try #require(try Self.json(try cli.ok(["feedback", "show"] + a + [Self.request, "--json"]))
            as? [String: Any])
        #expect(shown["status"] as? String == "pending" && shown["comment_count"] as? Int == 0, "refusals change nothing")
    }
}

