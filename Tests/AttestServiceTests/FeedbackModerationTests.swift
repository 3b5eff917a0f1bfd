import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation
import Testing

/// The moderation org API through the feedback pool (`FeedbackAdminEndpoint` over
/// `FeedbackModeration`): every route, what the devices then read with the SDK's strict
/// mirrors, the counters, the webhooks, merges, and the refusals.
@Suite struct FeedbackModerationTests {
    static let orgFeedback = "/api/v1/org/feedback"
    static let orgTickets = "/api/v1/org/tickets"
    static let app = "app_id=" + Fixture.appID

    /// The pool with an org API key of acme (scope all).
    final class Admin {
        let pool: FeedbackPool
        let key: String

        init() throws {
            pool = try FeedbackPool()
            key = try WebhooksAPITests.API.makeKey(pool.flow.fixture, org: "acme")
        }

        /// An org API call as nginx passes it to `feedback.sock`: (status, body).
        func call(_ method: String, _ path: String, query: String = FeedbackModerationTests.app, body: String? = nil,
                  key: String? = nil) -> (Int, JSONValue) {
            var params = ["REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_ID": "req-mod",
                          "REMOTE_ADDR": "127.0.0.1", "QUERY_STRING": query,
                          "HTTP_AUTHORIZATION": "Bearer " + (key ?? self.key)]
            params["REQUEST_URI"] = path + "?" + query
            let request = Request(method: method, path: path, query: query, params: params,
                                  body: Array((body ?? "").utf8))
            let r = Endpoint.feedback.handle(request, pool.context)
            return (r.status, FeedbackPool.json(r))
        }

        func event(_ name: String) throws -> JSONValue { try #require(try pool.events(name).last) }
    }

    static func members(_ v: JSONValue) -> Set<String> { Set(v.objectValue?.map(\.0) ?? []) }

    @Test func requestRoutesChangeWhatDevicesReadAsTheSDKDecodesIt() throws {
        let admin = try Admin()
        let pool = admin.pool
        let id = try #require(FeedbackPool.json(pool.create(push: true))["id"]?.stringValue)
        let listed = admin.call("GET", Self.orgFeedback)
        #expect(listed.0 == 200 && listed.1["feature_requests"]?.arrayValue?.first?["id"]?.stringValue == id)
        #expect(admin.call("GET", Self.orgFeedback, query: Self.app + "&status=planned").1["feature_requests"]?
            .arrayValue?.isEmpty == true)

        let patched = admin.call("PATCH", Self.orgFeedback + "/" + id.lowercased(), body: #"{"status":"planned"}"#)
        #expect(patched.0 == 200 && patched.1["status"] == "planned")
        let seen = try SDKFeedback.decode(SDKFeedback.FeatureRequest.self, pool.call("GET", FeedbackPool.features + "/" + id))
        #expect(seen.status == .planned, "the device's next read shows the new status")
        let changed = try admin.event("feedback.status_changed")
        #expect(Self.members(changed) == ["organization", "app_id", "team_id", "bundle_id", "feature_request_id",
                                          "previous_status", "status", "merged_into", "push_token", "push_environment"])
        #expect(changed["previous_status"] == "pending" && changed["status"] == "planned"
                && changed["feature_request_id"]?.stringValue == id && changed["push_token"] == "a1b2c3d4e5f6"
                && changed["push_environment"] == "production" && changed["app_id"]?.stringValue == Fixture.appID)
        #expect(admin.call("PATCH", Self.orgFeedback + "/" + id, body: #"{"status":"planned"}"#).0 == 200)
        #expect(try pool.events("feedback.status_changed").count == 1, "no change, no event")

        let commented = admin.call("POST", Self.orgFeedback + "/\(id)/comments", body: #"{"body":"On the roadmap."}"#)
        #expect(commented.0 == 201 && commented.1["author_type"] == "admin" && commented.1["author_id"] == "api")
        let comments = try SDKFeedback.decode([SDKFeedback.Comment].self,
                                              pool.call("GET", FeedbackPool.features + "/\(id)/comments"))
        #expect(comments.map(\.authorType) == [.admin] && comments.first?.body == "On the roadmap.")
        let commentEvent = try admin.event("feedback.commented")
        #expect(commentEvent["author_type"] == "admin" && commentEvent["feature_request_id"]?.stringValue == id)
        let shown = admin.call("GET", Self.orgFeedback + "/" + id)
        #expect(shown.1["comment_count"] == 1 && shown.1["comments"]?.arrayValue?.count == 1
                && shown.1["submitter_id"] == "submitter-a")
        let usage = try #require(try pool.context.store.read { try $0.feedbackUsage(org: "acme") })
        #expect(usage.requests == 1 && usage.comments == 1 && usage.bytes == UInt64("Dark mode".utf8.count
            + "Please add a dark mode to the app.".utf8.count + "On the roadmap.".utf8.count))
        #expect(try pool.context.store.check().isConsistent, "the counts add up after admin writes")
    }

    @Test func ticketRoutesAndAnAdminReplyAwaitingTheOpener() throws {
        let admin = try Admin()
        let pool = admin.pool
        let id = try #require(FeedbackPool.json(pool.openTicket())["id"]?.stringValue)
        #expect(admin.call("GET", Self.orgTickets).1["tickets"]?.arrayValue?.first?["submitter_email"]
                == "a@example.com")
        #expect(admin.call("GET", Self.orgTickets, query: Self.app + "&status=closed").1["tickets"]?.arrayValue?.isEmpty
                == true)
        let patched = admin.call("PATCH", Self.orgTickets + "/" + id, body: #"{"priority":"urgent"}"#)
        #expect(patched.0 == 200 && patched.1["priority"] == "urgent" && patched.1["status"] == "open")
        let priorityEvent = try admin.event("ticket.status_changed")
        #expect(Self.members(priorityEvent) == ["organization", "app_id", "team_id", "bundle_id", "ticket_id",
                                                "previous_status", "status", "previous_priority", "priority",
                                                "push_token", "push_environment"])
        #expect(priorityEvent["previous_priority"] == "normal" && priorityEvent["priority"] == "urgent")

        pool.flow.fixture.clock.advance(3)
        let replied = admin.call("POST", Self.orgTickets + "/\(id)/messages", body: #"{"body":"Try version 2.1."}"#)
        #expect(replied.0 == 201 && replied.1["author_type"] == "admin" && replied.1["ticket_id"]?.stringValue == id)
        let detail = try SDKFeedback.decode(SDKFeedback.TicketDetail.self, pool.call("GET", FeedbackPool.tickets + "/" + id))
        #expect(detail.status == .awaiting_reply && detail.priority == .urgent)
        #expect(detail.messages.map(\.authorType) == [.user, .admin] && detail.messages.last?.body == "Try version 2.1.")
        let message = try admin.event("ticket.message")
        #expect(message["author_type"] == "admin" && message["message_id"] == replied.1["id"])
        #expect(try admin.event("ticket.status_changed")["status"] == "awaiting_reply")

        #expect(pool.call("POST", FeedbackPool.tickets + "/\(id)/messages", body: #"{"body":"Works now."}"#).status == 201)
        #expect(try SDKFeedback.decode(SDKFeedback.TicketDetail.self,
                                       pool.call("GET", FeedbackPool.tickets + "/" + id)).status == .open)
        let closed = admin.call("PATCH", Self.orgTickets + "/" + id, body: #"{"status":"closed","priority":"low"}"#)
        #expect(closed.1["status"] == "closed" && closed.1["priority"] == "low" && closed.1["message_count"] == 3)
        let shown = admin.call("GET", Self.orgTickets + "/" + id)
        #expect(shown.1["messages"]?.arrayValue?.compactMap { $0["author_type"]?.stringValue } == ["user", "admin", "user"])
        let usage = try #require(try pool.context.store.read { try $0.feedbackUsage(org: "acme") })
        #expect(usage.tickets == 1 && usage.messages == 3)
        #expect(try pool.context.store.check().isConsistent)
    }

    /// A votes r1 and r2, B votes r1, C votes r2: after merging r1 into r2, r2 has A, B and C once each.
    @Test func mergeMovesVotesWithoutCountingAnAuthorTwice() throws {
        let admin = try Admin()
        let pool = admin.pool
        let (a, b, c) = (pool.token, try pool.device(), try pool.device())
        let r1 = try #require(FeedbackPool.json(pool.create(title: "Dark theme"))["id"]?.stringValue)
        let r2 = try #require(FeedbackPool.json(pool.create(title: "Dark mode"))["id"]?.stringValue)
        for (token, ids) in [(a, [r1, r2]), (b, [r1]), (c, [r2])] {
            for id in ids {
                #expect(pool.call("POST", FeedbackPool.features + "/\(id)/vote", body: "{}", token: .some(token)).status
                        == 201)
            }
        }
        let merged = admin.call("POST", Self.orgFeedback + "/\(r1)/merge", body: #"{"into":"\#(r2.lowercased())"}"#)
        #expect(merged.0 == 200 && merged.1["status"] == "duplicate" && merged.1["merged_into"]?.stringValue == r2
                && merged.1["vote_count"] == 0)
        let target = admin.call("GET", Self.orgFeedback + "/" + r2).1
        #expect(target["vote_count"] == 3, "A once, B moved, C: \(target)")
        let stored = try pool.context.store.read { txn in
            (try txn.voteCount(requestID: ReleaseNotes.parseID(r2)!), try txn.voteCount(requestID: ReleaseNotes.parseID(r1)!))
        }
        #expect(stored == (3, 0))
        let seenByB = try SDKFeedback.decode(SDKFeedback.FeatureRequest.self,
                                             pool.call("GET", FeedbackPool.features + "/" + r2, token: .some(b)))
        #expect(seenByB.hasVoted && seenByB.voteCount == 3, "B's vote moved")
        #expect(pool.call("POST", FeedbackPool.features + "/\(r2)/vote", body: "{}", token: .some(b)).status == 409)
        let event = try admin.event("feedback.status_changed")
        #expect(event["status"] == "duplicate" && event["merged_into"]?.stringValue == r2)
        #expect(try pool.context.store.check().isConsistent, "vote counts match the votes stored")

        #expect(admin.call("POST", Self.orgFeedback + "/\(r1)/merge", body: #"{"into":"\#(r2)"}"#).0 == 409)
        #expect(admin.call("POST", Self.orgFeedback + "/\(r2)/merge", body: #"{"into":"\#(r2)"}"#).0 == 400)
        #expect(admin.call("POST", Self.orgFeedback + "/\(r2)/merge", body: #"{"into":"\#(r1)"}"#).0 == 400,
                "not into a request merged elsewhere")
        #expect(admin.call("POST", Self.orgFeedback + "/\(r2)/merge",
                           body: #"{"into":"6F9619FF-8B86-4D01-B42D-00CF4FC964FF"}"#).0 == 404)
    }

    @Test func refusalsKeysOrganizationsAppsAndInput() throws {
        let admin = try Admin()
        let pool = admin.pool
        let rid = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let tid = try #require(FeedbackPool.json(pool.openTicket())["id"]?.stringValue)
        let routes: [(String, String, String?)] = [
            ("GET", Self.orgFeedback, nil), ("GET", Self.orgFeedback + "/" + rid, nil),
            ("PATCH", Self.orgFeedback + "/" + rid, #"{"status":"open"}"#),
            ("POST", Self.orgFeedback + "/\(rid)/comments", #"{"body":"hi"}"#),
            ("POST", Self.orgFeedback + "/\(rid)/merge", #"{"into":"\#(rid)"}"#),
            ("GET", Self.orgTickets, nil), ("GET", Self.orgTickets + "/" + tid, nil),
            ("PATCH", Self.orgTickets + "/" + tid, #"{"status":"closed"}"#),
            ("POST", Self.orgTickets + "/\(tid)/messages", #"{"body":"hi"}"#),
        ]
        let (heartbeat, record) = APIKeys.generate(org: "acme", name: "hb", scope: .heartbeat, random: SystemRandom(),
                                                   now: pool.now)
        try pool.context.store.write([.durable]) { txn in try txn.put(record) }
        let evil = try WebhooksAPITests.API.makeKey(pool.flow.fixture, org: "evil")
        for (method, path, body) in routes {
            #expect(admin.call(method, path, body: body, key: heartbeat).0 == 403, "\(method) \(path)")
            #expect(admin.call(method, path, body: body, key: "aat_nope").0 == 401, "\(method) \(path)")
            let other = admin.call(method, path, body: body, key: evil)
            #expect(other.0 == 404 && other.1["code"] == "not_found", "another organization: \(method) \(path)")
            let device = pool.call(method, path, body: body)
            #expect(device.status == 401, "a device token is not an org key: \(method) \(path)")
        }
        // Another app of the same organization: its ids are not this app's.
        try pool.context.store.write([.durable]) { txn in
            try txn.put(AppRecord(teamID: "OTHER12345", bundleID: "com.other", org: "acme", createdAt: Timestamp(seconds: 0)))
        }
        for (method, path, body) in routes where path.count > Self.orgTickets.count + 1 {
            let r = admin.call(method, path, query: "app_id=OTHER12345.com.other", body: body)
            #expect(r.0 == 404, "another app's id: \(method) \(path)")
        }
        let statuses = try pool.context.store.read { txn in
            (try txn.featureRequest(appID: Fixture.appID, id: ReleaseNotes.parseID(rid)!)?.status,
             try txn.ticket(appID: Fixture.appID, id: ReleaseNotes.parseID(tid)!)?.status)
        }
        #expect(statuses == (.pending, .open), "nothing refused changed anything")
        let refusedEvents = try pool.events("feedback.status_changed") + pool.events("ticket.status_changed")
            + pool.events("feedback.commented") + pool.events("ticket.message")
        #expect(refusedEvents.isEmpty)

        let unknown = "6F9619FF-8B86-4D01-B42D-00CF4FC964FF"
        #expect(admin.call("GET", Self.orgFeedback + "/" + unknown).0 == 404)
        #expect(admin.call("GET", Self.orgTickets + "/not-a-uuid").0 == 404)
        #expect(admin.call("PATCH", Self.orgTickets + "/" + unknown, body: #"{"status":"closed"}"#).0 == 404)
        let badStatus = admin.call("PATCH", Self.orgFeedback + "/" + rid, body: #"{"status":"done"}"#)
        #expect(badStatus.0 == 400 && badStatus.1["field"] == "status")
        #expect(admin.call("PATCH", Self.orgTickets + "/" + tid, body: #"{"priority":"asap"}"#).0 == 400)
        #expect(admin.call("PATCH", Self.orgTickets + "/" + tid, body: "{}").0 == 400)
        #expect(admin.call("GET", Self.orgFeedback, query: Self.app + "&status=nope").0 == 400)
        #expect(admin.call("POST", Self.orgFeedback + "/\(rid)/comments", body: #"{"body":"   "}"#).0 == 400)
        #expect(admin.call("POST", Self.orgTickets + "/\(tid)/messages", body: "{}").0 == 400)
        #expect(admin.call("GET", Self.orgFeedback, query: "").0 == 400, "app_id is required")
        #expect(admin.call("DELETE", Self.orgFeedback + "/" + rid).0 == 405)
        #expect(admin.call("POST", Self.orgTickets).0 == 405)
        #expect(admin.call("GET", Self.orgFeedback + "/\(rid)/votes").0 == 404)
    }

    /// docs/webhooks.md has a row for each moderation event naming every member its data has.
    @Test func theWebhookDocumentNamesTheEventsDataMembers() throws {
        let admin = try Admin()
        let pool = admin.pool
        let rid = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let tid = try #require(FeedbackPool.json(pool.openTicket())["id"]?.stringValue)
        #expect(admin.call("PATCH", Self.orgFeedback + "/" + rid, body: #"{"status":"open"}"#).0 == 200)
        #expect(admin.call("POST", Self.orgFeedback + "/\(rid)/comments", body: #"{"body":"ok"}"#).0 == 201)
        #expect(admin.call("POST", Self.orgTickets + "/\(tid)/messages", body: #"{"body":"ok"}"#).0 == 201)
        let doc = try DocumentationTests.document("docs/webhooks.md")
        for name in ["feedback.status_changed", "feedback.commented", "ticket.status_changed", "ticket.message"] {
            let row = try #require(doc.split(separator: "\n").first { $0.hasPrefix("| `\(name)` |") }, "\(name)")
            let data = try admin.event(name)
            for member in Self.members(data) {
                #expect(row.contains("`\(member)`"), "docs/webhooks.md's \(name) row lacks \(member)")
            }
        }
    }
}
