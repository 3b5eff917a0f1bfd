import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation
import Testing

/// Support tickets through the feedback pool (sdk-auxiliary.md §Support tickets), decoded with
/// `SDKFeedback`'s strict mirrors, and who may read them: the opener's lineage, or a device
/// verifiably linked to the opener's subject; never a client-claimed id or subject.
@Suite struct FeedbackTicketsTests {
    static let tickets = FeedbackPool.tickets

    @Test func openListShowAndReplyDecodeAsTheSDKReadsThem() throws {
        let pool = try FeedbackPool()
        let opened = pool.openTicket()
        #expect(opened.status == 201, "\(String(decoding: opened.body, as: UTF8.self))")
        let ticket = try SDKFeedback.decode(SDKFeedback.Ticket.self, opened)
        #expect(ticket.status == .open && ticket.priority == .normal && ticket.messageCount == 1)
        let id = ticket.id.uuidString
        let listed = try SDKFeedback.decode([SDKFeedback.Ticket].self,
                                            pool.call("GET", Self.tickets, query: "submitter_id=user-42"))
        #expect(listed.map(\.id) == [ticket.id])
        #expect(try SDKFeedback.decode([SDKFeedback.Ticket].self,
                                       pool.call("GET", Self.tickets, query: "submitter_id=someone-else")).isEmpty,
                "submitter_id filters the caller's own list")
        pool.flow.fixture.clock.advance(5)
        let replied = pool.call("POST", Self.tickets + "/\(id.lowercased())/messages",
                                body: #"{"authorId":"user-42","body":"Still broken."}"#)
        #expect(replied.status == 201)
        let message = try SDKFeedback.decode(SDKFeedback.Message.self, replied)
        #expect(message.ticketId == ticket.id && message.authorType == .user && message.body == "Still broken.")
        let shown = pool.call("GET", Self.tickets + "/\(id)")
        #expect(shown.status == 200 && shown.header("Cache-Control") == "no-store")
        let detail = try SDKFeedback.decode(SDKFeedback.TicketDetail.self, shown)
        #expect(detail.messages.map(\.body) == ["The login button does nothing.", "Still broken."])
        #expect(detail.updatedAt > detail.createdAt, "a reply moves updatedAt")
        #expect(try SDKFeedback.decode([SDKFeedback.Ticket].self, pool.call("GET", Self.tickets)).first?.messageCount
                    == 2)
        let usage = try #require(try pool.context.store.read { try $0.feedbackUsage(org: "acme") })
        #expect(usage.tickets == 1 && usage.messages == 2)
        let created = try #require(try pool.events("ticket.created").first)
        #expect(created["ticket_id"]?.stringValue == id && created["submitter_email"] == "a@example.com")
        #expect(try pool.events("ticket.message").count == 1)
    }

    @Test func aThreadWrittenWithinOneSecondListsInTheOrderItWasWritten() throws {
        let pool = try FeedbackPool()
        let tid = try #require(FeedbackPool.json(pool.openTicket(body: "m0"))["id"]?.stringValue)
        let rid = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let bodies = (1...24).map { "m\($0)" }
        for body in bodies {
            #expect(pool.call("POST", Self.tickets + "/\(tid)/messages", body: #"{"body":"\#(body)"}"#).status == 201)
            #expect(pool.call("POST", FeedbackPool.features + "/\(rid)/comments", body: #"{"body":"\#(body)"}"#).status
                        == 201)
        }
        let detail = try SDKFeedback.decode(SDKFeedback.TicketDetail.self, pool.call("GET", Self.tickets + "/\(tid)"))
        #expect(detail.messages.map(\.body) == ["m0"] + bodies)
        let comments = try SDKFeedback.decode([SDKFeedback.Comment].self,
                                              pool.call("GET", FeedbackPool.features + "/\(rid)/comments"))
        #expect(comments.map(\.body) == bodies)
    }

    @Test func anotherDeviceSendingTheSameSubmitterIDGetsNothing() throws {
        let pool = try FeedbackPool()
        let id = try #require(FeedbackPool.json(pool.openTicket())["id"]?.stringValue)
        let attacker = try pool.device()
        let list = pool.call("GET", Self.tickets, query: "submitter_id=user-42", token: attacker)
        #expect(try list.status == 200 && SDKFeedback.decode([SDKFeedback.Ticket].self, list).isEmpty)
        let read = pool.call("GET", Self.tickets + "/\(id)", token: attacker)
        #expect(read.status == 404 && FeedbackPool.json(read)["code"] == "not_found", "404, not 403")
        #expect(pool.call("POST", Self.tickets + "/\(id)/messages", body: #"{"authorId":"user-42","body":"hi"}"#,
                          token: attacker).status == 404)
        #expect(try pool.context.store.read { try $0.messages(ticketID: ReleaseNotes.parseID(id)!) }.count == 1)
    }

    @Test func aSubjectTheDeviceAssertedGrantsNothing() throws {
        // Policy asserted: any device links itself to any subject id it sends.
        let pool = try FeedbackPool(subjectLinks: .asserted, subjectID: "house-17")
        #expect(try pool.flow.storedDevice()?.subjectID == "house-17")
        let id = try #require(FeedbackPool.json(pool.openTicket())["id"]?.stringValue)
        let attacker = try pool.device(subjectID: "house-17")
        #expect(try SDKFeedback.decode([SDKFeedback.Ticket].self,
                                       pool.call("GET", Self.tickets, token: attacker)).isEmpty)
        #expect(pool.call("GET", Self.tickets + "/\(id)", token: attacker).status == 404)
        #expect(try pool.context.store.read { try $0.count(.ticketsByAuthor) } == 1, "no subject entry was written")
    }

    @Test func aVerifiedSubjectLinkReadsTheSubjectsTickets() throws {
        var pool: FeedbackPool?
        let flowForSecret = try FeedbackPool(subjectLinks: .signed)
        _ = flowForSecret
        // The fixture's secret signs the value, as the organization's backend would.
        pool = try FeedbackPool(subjectLinks: .signed) { _ in }
        let p = try #require(pool)
        func signed(_ subject: String) -> String {
            SignedSubject.mint(subject: subject, expiry: p.now + 600, secret: p.flow.fixture.subjectSecret)
        }
        let opener = try p.device(subjectID: signed("house-17"))
        let id = try #require(FeedbackPool.json(p.openTicket(token: opener))["id"]?.stringValue)
        let sibling = try p.device(subjectID: signed("house-17"))
        let listed = try SDKFeedback.decode([SDKFeedback.Ticket].self, p.call("GET", Self.tickets, token: sibling))
        #expect(listed.map(\.id.uuidString) == [id])
        #expect(p.call("GET", Self.tickets + "/\(id)", token: sibling).status == 200)
        #expect(p.call("POST", Self.tickets + "/\(id)/messages", body: #"{"body":"Same here"}"#, token: sibling).status
                    == 201)
        let stranger = try p.device(subjectID: signed("house-18"))
        #expect(p.call("GET", Self.tickets + "/\(id)", token: stranger).status == 404)
        #expect(p.call("GET", Self.tickets + "/\(id)").status == 404, "the fixture's unlinked device")
        let report = try p.context.store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems)) \(report.crossProblems)")
    }

    @Test func foreignOrMalformedIdsAre404AndLimitsAre400() throws {
        let pool = try FeedbackPool()
        let foreign = TicketRecord(id: [UInt8](repeating: 0xCD, count: 16), subject: "Other", createdAt: pool.now,
                                   updatedAt: pool.now, author: .device(lineageDigest: [UInt8](repeating: 2, count: 16)),
                                   submitterID: "user-42")
        try pool.context.store.write { try $0.put(foreign, appID: "ZZZZZ99999.com.other.app") }
        for id in [ReleaseNotes.idText(foreign.id), UUID().uuidString, "nope"] {
            #expect(pool.call("GET", Self.tickets + "/\(id)").status == 404, "\(id)")
            #expect(pool.call("POST", Self.tickets + "/\(id)/messages", body: #"{"body":"x"}"#).status == 404, "\(id)")
        }
        #expect(pool.call("PUT", Self.tickets).status == 405)
        #expect(pool.call("GET", Self.tickets + "/\(UUID().uuidString)/messages").status == 405)
        for (body, field) in [
            (#"{"subject":"ab","body":"x"}"#, "subject"),
            (#"{"subject":"Help","body":""}"#, "body"),
            (#"{"subject":"Help","body":"\#(String(repeating: "x", count: 5_001))"}"#, "body"),
            (#"{"subject":"Help","body":"x","submitterEmail":"no-at-sign"}"#, "submitterEmail"),
            (#"{"subject":"Help","body":"x","deviceHash":"\#(String(repeating: "h", count: 129))"}"#, "deviceHash"),
        ] {
            let r = pool.call("POST", Self.tickets, body: body)
            #expect(r.status == 400 && FeedbackPool.json(r)["field"]?.stringValue == field, "\(body.prefix(60))")
        }
        #expect(try pool.context.store.read { try $0.tickets(appID: Fixture.appID) }.isEmpty)
    }
}
