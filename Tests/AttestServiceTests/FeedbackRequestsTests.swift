import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation
import Testing

/// Feature requests through the feedback pool as the SDK calls them (sdk-auxiliary.md §Feature
/// requests), every answer decoded with `SDKFeedback`'s strict mirrors.
@Suite struct FeedbackRequestsTests {
    static let features = FeedbackPool.features

    @Test func createShowAndListDecodeAsTheSDKReadsThem() throws {
        let pool = try FeedbackPool()
        let created = pool.create()
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let request = try SDKFeedback.decode(SDKFeedback.FeatureRequest.self, created)
        #expect(request.title == "Dark mode" && request.status == .pending && request.voteCount == 0
                    && !request.hasVoted && request.commentCount == 0)
        #expect(created.header("Cache-Control") == "no-store")
        let text = String(decoding: created.body, as: UTF8.self)
        let id = try #require(FeedbackPool.json(created)["id"]?.stringValue)
        #expect(id == id.uppercased() && id == request.id.uuidString, "UUIDs go out upper-case")
        #expect(text.contains("\"createdAt\":\"2026-06-01T12:00:00Z\""), "no fractional seconds: \(text)")

        // The SDK's default list call, and a lower-case id in the path.
        let list = pool.call("GET", Self.features, query: "sort=votes&page=1&per=20")
        #expect(list.status == 200)
        let page = try SDKFeedback.decode(SDKFeedback.Page.self, list)
        #expect(page.items.map(\.id) == [request.id])
        #expect(page.metadata.page == 1 && page.metadata.per == 20 && page.metadata.total == 1)
        let shown = pool.call("GET", Self.features + "/" + id.lowercased())
        #expect(shown.status == 200)
        #expect(try SDKFeedback.decode(SDKFeedback.FeatureRequest.self, shown).id == request.id)
    }

    @Test func oneVotePerLineageWhateverTheVoterIDAndHasVotedIsTheCallers() throws {
        let pool = try FeedbackPool()
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let voter = try pool.device()
        let voted = pool.call("POST", Self.features + "/\(id)/vote", body: #"{"voterId":"v1","deviceHash":"h"}"#,
                              token: voter)
        #expect(voted.status == 201)
        let vote = try SDKFeedback.decode(SDKFeedback.Vote.self, voted)
        #expect(vote.featureRequestId.uuidString == id)
        // Vote stuffing: the same device (lineage) with another voterId.
        let again = pool.call("POST", Self.features + "/\(id)/vote", body: #"{"voterId":"v2","deviceHash":"h2"}"#,
                              token: voter)
        #expect(again.status == 409 && FeedbackPool.json(again)["code"] == "conflict")
        let theirs = try SDKFeedback.decode(SDKFeedback.FeatureRequest.self,
                                            pool.call("GET", Self.features + "/\(id)", token: voter))
        #expect(theirs.hasVoted && theirs.voteCount == 1)
        // The submitter asks with the voter's voter_id: hasVoted is still its own (false).
        let mine = try SDKFeedback.decode(SDKFeedback.Page.self,
                                          pool.call("GET", Self.features, query: "voter_id=v1"))
        #expect(mine.items.first?.hasVoted == false && mine.items.first?.voteCount == 1)

        #expect(pool.call("DELETE", Self.features + "/\(id)/vote", query: "voter_id=v1", token: voter).status == 204)
        #expect(pool.call("DELETE", Self.features + "/\(id)/vote", token: voter).status == 204, "no vote: 204 too")
        let after = try SDKFeedback.decode(SDKFeedback.FeatureRequest.self, pool.call("GET", Self.features + "/\(id)"))
        #expect(after.voteCount == 0)
        #expect(pool.call("POST", Self.features + "/\(id)/vote", body: #"{"voterId":"v1"}"#, token: voter).status
                    == 201, "a removed vote may be cast again")
    }

    @Test func commentsAreListedOldestFirstWithTheirAuthorType() throws {
        let pool = try FeedbackPool()
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let posted = pool.call("POST", Self.features + "/\(id)/comments",
                               body: #"{"authorId":"a","body":"  Yes please  ","pushToken":"abcdef","pushEnvironment":"sandbox"}"#)
        #expect(posted.status == 201)
        let comment = try SDKFeedback.decode(SDKFeedback.Comment.self, posted)
        #expect(comment.body == "Yes please" && comment.authorType == .user && comment.featureRequestId.uuidString == id)
        let other = try pool.device()
        #expect(pool.call("POST", Self.features + "/\(id)/comments", body: #"{"authorId":"b","body":"Me too"}"#,
                          token: other).status == 201)
        let listed = pool.call("GET", Self.features + "/\(id)/comments", token: other)
        let comments = try SDKFeedback.decode([SDKFeedback.Comment].self, listed)
        #expect(comments.map(\.body) == ["Yes please", "Me too"])
        let request = try SDKFeedback.decode(SDKFeedback.FeatureRequest.self, pool.call("GET", Self.features + "/\(id)"))
        #expect(request.commentCount == 2)
        let event = try #require(try pool.events("feedback.commented").first)
        #expect(event["push_token"] == "abcdef" && event["push_environment"] == "sandbox"
                    && event["feature_request_id"]?.stringValue == id && event["author_type"] == "device")
    }

    @Test func sortStatusAndPagesFollowTheQuery() throws {
        let pool = try FeedbackPool()
        var ids = [String]()
        for (i, title) in ["First", "Second", "Third"].enumerated() {
            pool.flow.fixture.clock.advance(10)
            ids.append(try #require(FeedbackPool.json(pool.create(title: title + " idea"))["id"]?.stringValue, "\(i)"))
        }
        for token in [try pool.device(), try pool.device()] {
            #expect(pool.call("POST", Self.features + "/\(ids[0])/vote", body: "{}", token: token).status == 201)
        }
        #expect(pool.call("POST", Self.features + "/\(ids[2])/vote", body: "{}").status == 201)
        func order(_ query: String) throws -> [String] {
            try SDKFeedback.decode(SDKFeedback.Page.self, pool.call("GET", Self.features, query: query)).items
                .map(\.id.uuidString)
        }
        #expect(try order("sort=votes") == [ids[0], ids[2], ids[1]])
        #expect(try order("sort=most_voted") == [ids[0], ids[2], ids[1]])
        #expect(try order("sort=newest") == [ids[2], ids[1], ids[0]])
        #expect(try order("sort=oldest") == ids)
        let second = try SDKFeedback.decode(SDKFeedback.Page.self,
                                            pool.call("GET", Self.features, query: "sort=oldest&page=2&per=1"))
        #expect(second.items.map(\.id.uuidString) == [ids[1]] && second.metadata.total == 3
                    && second.metadata.page == 2 && second.metadata.per == 1)
        let open = try SDKFeedback.decode(SDKFeedback.Page.self, pool.call("GET", Self.features, query: "status=open"))
        #expect(open.items.isEmpty && open.metadata.total == 0)
        #expect(try order("status=pending&per=100").count == 3)
        for (query, field) in [("sort=top", "sort"), ("status=done", "status"), ("page=0", "page"), ("per=0", "per"),
                               ("per=101", "per"), ("page=x", "page"), ("sort=votes&sort=newest", "")] {
            let r = pool.call("GET", Self.features, query: query)
            #expect(r.status == 400, "\(query)")
            if !field.isEmpty { #expect(FeedbackPool.json(r)["field"]?.stringValue == field, "\(query)") }
        }
    }

    @Test func fieldsOutsideTheirLimitsAre400NamingTheField() throws {
        let pool = try FeedbackPool()
        let long = String(repeating: "é", count: 201)
        for (body, field) in [
            (#"{"title":"ab","description":"long enough text"}"#, "title"),
            (#"{"title":"   abc   ","description":"too short"}"#, "description"),
            (#"{"title":"\#(long)","description":"long enough text"}"#, "title"),
            (#"{"title":"Tab\u0000here","description":"long enough text"}"#, "title"),
            (#"{"description":"long enough text"}"#, "title"),
            (#"{"title":7,"description":"long enough text"}"#, "title"),
            (#"{"title":"Fine","description":"long enough text","pushToken":"not hex!"}"#, "pushToken"),
            (#"{"title":"Fine","description":"long enough text","pushEnvironment":"prod env"}"#, "pushEnvironment"),
            (#"{"title":"Fine","description":"long enough text","submitterId":"\#(String(repeating: "s", count: 129))"}"#,
             "submitterId"),
        ] {
            let r = pool.call("POST", Self.features, body: body)
            #expect(r.status == 400 && FeedbackPool.json(r)["field"]?.stringValue == field, "\(body): \(r.status)")
        }
        // 200 characters of two bytes each pass: characters are counted, not bytes.
        #expect(pool.create(title: String(repeating: "é", count: 200)).status == 201)
        #expect(pool.call("POST", Self.features, body: "not json").status == 400)
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        for body in [#"{"body":""}"#, #"{"body":"   "}"#, #"{"body":"\#(String(repeating: "x", count: 2_001))"}"#] {
            let r = pool.call("POST", Self.features + "/\(id)/comments", body: body)
            #expect(r.status == 400 && FeedbackPool.json(r)["field"] == "body", "\(body.prefix(30))")
        }
        #expect(try pool.context.store.read { try $0.featureRequests(appID: Fixture.appID) }.count == 2,
                "nothing refused was stored")
    }

    @Test func unknownForeignOrMalformedIdsAre404AndMethodsAre405() throws {
        let pool = try FeedbackPool()
        // A request of another app, put straight into the store.
        let foreign = FeatureRequestRecord(id: [UInt8](repeating: 0xAB, count: 16), title: "Other", description: "Other app",
                                           createdAt: pool.now, updatedAt: pool.now,
                                           author: .device(lineageDigest: [UInt8](repeating: 1, count: 16)),
                                           submitterID: "x")
        try pool.context.store.write { try $0.put(foreign, appID: "ZZZZZ99999.com.other.app") }
        let foreignID = ReleaseNotes.idText(foreign.id)
        for id in [foreignID, foreignID.lowercased(), UUID().uuidString, "not-a-uuid", "1"] {
            #expect(pool.call("GET", Self.features + "/" + id).status == 404, "\(id)")
            #expect(pool.call("POST", Self.features + "/\(id)/vote", body: "{}").status == 404, "\(id)")
            #expect(pool.call("DELETE", Self.features + "/\(id)/vote").status == 404, "\(id)")
            #expect(pool.call("GET", Self.features + "/\(id)/comments").status == 404, "\(id)")
            #expect(pool.call("POST", Self.features + "/\(id)/comments", body: #"{"body":"hi"}"#).status == 404, "\(id)")
        }
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        #expect(pool.call("GET", Self.features + "/\(id)/votes").status == 404)
        #expect(pool.call("PUT", Self.features).status == 405)
        #expect(pool.call("DELETE", Self.features + "/\(id)").status == 405)
        #expect(pool.call("GET", Self.features + "/\(id)/vote").header("Allow") == "POST, DELETE")
    }

    @Test func authIsFlagsAndTheOrganizationSwitchIs403() throws {
        let pool = try FeedbackPool()
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        #expect(pool.call("GET", Self.features, token: .some(nil)).status == 401, "app headers alone")
        #expect(pool.call("GET", Self.features, token: "not-a-token").status == 401)
        try pool.context.store.write { txn in
            var org = try #require(try txn.org(named: "acme"))
            org.feedbackEnabled = false
            try txn.put(org)
        }
        for (method, path, body) in [("GET", Self.features, ""), ("POST", Self.features, "{}"),
                                     ("GET", Self.features + "/\(id)", ""),
                                     ("POST", Self.features + "/\(id)/vote", "{}"),
                                     ("GET", Self.features + "/\(id)/comments", ""),
                                     ("GET", FeedbackPool.tickets, "")] {
            let r = pool.call(method, path, body: body)
            #expect(r.status == 403 && FeedbackPool.json(r)["code"] == "feedback_not_available", "\(method) \(path)")
        }
        #expect(pool.call("GET", Self.features, token: .some(nil)).status == 401, "still 401 before the switch")
        try pool.context.store.write { txn in
            var org = try #require(try txn.org(named: "acme"))
            org.feedbackEnabled = true
            try txn.put(org)
        }
        _ = try pool.flow.flag(.block)
        #expect(pool.call("GET", Self.features).status == 403, "a blocked device")
    }

    @Test func writesCountTheOrganizationsUsageAndQueueTheirEvents() throws {
        let pool = try FeedbackPool()
        let created = pool.create(title: "Widgets", description: "Home screen widgets", push: true)
        let id = try #require(FeedbackPool.json(created)["id"]?.stringValue)
        #expect(pool.call("POST", Self.features + "/\(id)/comments", body: #"{"body":"Yes"}"#).status == 201)
        let usage = try #require(try pool.context.store.read { try $0.feedbackUsage(org: "acme") })
        #expect(usage.requests == 1 && usage.comments == 1 && usage.bytes == UInt64("Widgets".utf8.count
                    + "Home screen widgets".utf8.count + "Yes".utf8.count))
        let report = try pool.context.store.check()
        #expect(report.isConsistent, "\(report.databases.flatMap(\.problems)) \(report.crossProblems)")
        let event = try #require(try pool.events("feedback.created").first)
        #expect(event["feature_request_id"]?.stringValue == id && event["push_token"] == "a1b2c3d4e5f6"
                    && event["push_environment"] == "production" && event["submitter_id"] == "submitter-a"
                    && event["app_id"]?.stringValue == Fixture.appID)
    }
}

/// An API key has no device: its author is the key with the `X-Device-ID` it sends (simulator
/// builds sharing one key are told apart only by that client-claimed id).
@Suite struct FeedbackAPIKeyTests {
    @Test func anAPIKeysAuthorIsTheKeyWithItsDeviceID() throws {
        let pool = try FeedbackPool()
        let (key, record) = APIKeys.generate(org: "acme", name: "sim", random: SystemRandom(), now: pool.now)
        try pool.context.store.write([.durable]) { try $0.put(record) }
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let path = FeedbackPool.features + "/\(id)/vote"
        func vote(_ device: String) -> Int {
            pool.call("POST", path, body: "{}", token: key, headers: ["X-Device-ID": device]).status
        }
        #expect(vote("sim-1") == 201)
        #expect(vote("sim-1") == 409)
        #expect(vote("sim-2") == 201, "another client-claimed id is another author")
        let listed = try SDKFeedback.decode(SDKFeedback.Page.self,
                                            pool.call("GET", FeedbackPool.features, token: key,
                                                      headers: ["X-Device-ID": "sim-1"]))
        #expect(listed.items.first?.hasVoted == true && listed.items.first?.voteCount == 2)
        let ticket = pool.openTicket(token: key)
        #expect(ticket.status == 201)
        let tid = try #require(FeedbackPool.json(ticket)["id"]?.stringValue)
        #expect(pool.call("GET", FeedbackPool.tickets + "/\(tid)").status == 404, "the device is not the key")
    }
}
