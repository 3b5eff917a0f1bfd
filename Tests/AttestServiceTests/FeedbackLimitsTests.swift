import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation
import Testing

/// The feedback pool's limits: per-device rate buckets (`feedback.*` keys) and the
/// organization's bounds (`FeedbackLimits`), and the body cap.
@Suite struct FeedbackLimitsTests {
    @Test func aDevicePastItsDailyRequestsIs429WithRetryAfterAndOthersAreNot() throws {
        let pool = try FeedbackPool { $0.feedbackRequestsPerDevicePerDay = 2 }
        #expect(pool.create().status == 201)
        #expect(pool.create().status == 201)
        let refused = pool.create()
        #expect(refused.status == 429 && FeedbackPool.json(refused)["code"] == "rate_limited")
        let retry = try #require(refused.header("Retry-After").flatMap { Int($0) })
        #expect(retry > 0 && retry <= 86_400)
        #expect(retry == 43_200, "to the end of the UTC day: the fixture's clock is at noon")
        #expect(pool.create(token: try pool.device()).status == 201, "another device has its own bucket")
    }

    @Test func votesAndTicketsHaveTheirOwnBuckets() throws {
        let pool = try FeedbackPool { $0.feedbackVotesPerDevicePerHour = 1; $0.feedbackTicketsPerDevicePerDay = 1 }
        let id = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        #expect(pool.call("POST", FeedbackPool.features + "/\(id)/vote", body: "{}").status == 201)
        #expect(pool.call("DELETE", FeedbackPool.features + "/\(id)/vote").status == 429, "unvotes count as votes")
        #expect(pool.openTicket().status == 201)
        #expect(pool.openTicket().status == 429)
    }

    @Test func theOrganizationsBoundsAre429NamingTheBound() throws {
        let pool = try FeedbackPool()
        try pool.context.store.write { try $0.put(FeedbackUsageRecord(requests: 10_000), org: "acme") }
        let refused = pool.create()
        #expect(refused.status == 429 && FeedbackPool.json(refused)["code"] == "store_quota_exceeded"
                    && FeedbackPool.json(refused)["bound"] == "requests" && FeedbackPool.json(refused)["limit"] == 10_000)
        #expect(pool.openTicket().status == 201, "tickets have their own bound")
        try pool.context.store.write { try $0.put(FeedbackUsageRecord(bytes: 64 << 20), org: "acme") }
        let full = pool.openTicket()
        #expect(full.status == 429 && FeedbackPool.json(full)["bound"] == "bytes")
        #expect(try pool.context.store.read { try $0.tickets(appID: Fixture.appID) }.count == 1, "nothing stored")
    }

    @Test func aBodyOverThePoolsCapIs413() throws {
        let pool = try FeedbackPool()
        var params = ["REQUEST_METHOD": "POST", "DOCUMENT_URI": FeedbackPool.features, "REQUEST_ID": "r",
                      "REMOTE_ADDR": "127.0.0.1", "HTTP_AUTHORIZATION": "Bearer " + pool.token]
        for (k, v) in Fixture.appHeaders { params["HTTP_" + k.uppercased().replacingOccurrences(of: "-", with: "_")] = v }
        let request = Request(fastCGIParams: params, body: [], bodyTooLarge: true)
        #expect(Endpoint.feedback.handle(request, pool.context).status == 413)
    }
}
