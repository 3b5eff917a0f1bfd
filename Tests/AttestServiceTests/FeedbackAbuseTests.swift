import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation
import Testing

/// Abuse of the feedback pool found by the review of #42 (each failed on the code as it first
/// landed): a subject link asserted before a policy change, text of few characters but many
/// bytes, an API key rotating X-Device-ID, and the SDK's unescaped + in submitter_id.
@Suite struct FeedbackAbuseTests {
    static let tickets = FeedbackPool.tickets

    /// Privacy: `FeedbackCaller.verifiedSubject` trusts a device's `subjectID` by the
    /// organization's policy *now*, not by how the link was made. A device that asserted
    /// "house-17" while the policy was `asserted` keeps that link (SubjectLinks: links already
    /// made stay) and, once the operator moves the organization to `signed`, reads every
    /// ticket a verified member of house-17 opens. docs/feedback.md: "A subject a device asserted
    /// itself (policy `asserted`) grants nothing."
    @Test func aSubjectAssertedBeforeThePolicyBecameSignedReadsNoTicket() throws {
        let pool = try FeedbackPool(subjectLinks: .asserted)
        let squatter = try pool.device(subjectID: "house-17")
        try pool.context.store.write([.durable]) { txn in
            var org = try #require(try txn.org(named: "acme"))
            org.subjectLinks = .signed
            try txn.put(org)
        }
        let value = SignedSubject.mint(subject: "house-17", expiry: pool.now + 600,
                                       secret: pool.flow.fixture.subjectSecret)
        let owner = try pool.device(subjectID: value)
        let opened = pool.openTicket(subject: "Card declined", body: "My card ending 4242 was declined.",
                                     token: owner)
        let id = try #require(FeedbackPool.json(opened)["id"]?.stringValue)
        #expect(pool.call("GET", Self.tickets + "/\(id)", token: try pool.device()).status == 404,
                "control: a device with no link does not read it")
        let read = pool.call("GET", Self.tickets + "/\(id)", token: squatter)
        #expect(read.status == 404, "the asserted link read: \(String(decoding: read.body, as: UTF8.self).prefix(200))")
        let listed = try SDKFeedback.decode([SDKFeedback.Ticket].self, pool.call("GET", Self.tickets, token: squatter))
        #expect(listed.isEmpty, "the asserted link lists the owner's ticket")
        #expect(pool.call("POST", Self.tickets + "/\(id)/messages", body: #"{"body":"hi"}"#, token: squatter).status
                    == 404)
    }

    /// Text bounds are counted in Characters, records are refused past 64 KiB: a body the pool
    /// admits (under the 64 KiB cap of nginx and `server.bodyLimitBytes`) whose text is a few
    /// Characters of combining marks passes `FeedbackInput.text`, then `put` throws
    /// `StoreError(.tooLarge)`, which the service answers 503 "temporarily unavailable" (the SDK
    /// retries a 5xx, each retry charged to the device's bucket). A device's input should be 400
    /// naming the field (or be stored), never a 5xx. Each record adds more bytes of its own than
    /// its JSON body has around the text: a request (description), a comment (body), a ticket
    /// (subject, one line).
    @Test func textOfFewCharactersButManyBytesIsNot503() throws {
        let pool = try FeedbackPool()
        let rid = try #require(FeedbackPool.json(pool.create())["id"]?.stringValue)
        let marks = { (n: Int) in String(repeating: "\u{0301}", count: n) }
        let description = "abcdefghij" + marks(32_729)
        #expect(description.count == 10)
        let cases: [(String, String, String)] = [
            ("request", FeedbackPool.features, #"{"title":"abc","description":"\#(description)"}"#),
            ("comment", FeedbackPool.features + "/\(rid)/comments", #"{"body":"x\#(marks(32_759))"}"#),
            ("ticket", Self.tickets, #"{"subject":"abc\#(marks(32_750))","body":"x"}"#),
        ]
        for (what, path, body) in cases {
            #expect(body.utf8.count <= 65_536, "\(what): within the default body caps")
            let r = pool.call("POST", path, body: body)
            #expect(r.status == 201 || r.status == 400,
                    "\(what): status \(r.status): \(String(decoding: r.body, as: UTF8.self).prefix(160))")
        }
    }

    /// Rates: an API key's author is the key plus its client-claimed `X-Device-ID`, and so
    /// is its rate bucket (`FeedbackRates.charge` keys on the author): a caller holding one key
    /// (simulator builds ship it) sends a new `X-Device-ID` with each call and is never
    /// limited, so it can fill the organization's 10,000 requests (then every device of every
    /// app of the organization gets 429 `store_quota_exceeded`) or stuff votes. The key as a
    /// whole needs a bucket too.
    @Test func anAPIKeyRotatingXDeviceIDIsStillRateLimited() throws {
        let pool = try FeedbackPool { $0.feedbackRequestsPerDevicePerDay = 2 }
        let (key, record) = APIKeys.generate(org: "acme", name: "sim", random: SystemRandom(), now: pool.now)
        try pool.context.store.write([.durable]) { try $0.put(record) }
        let same = (1...3).map { _ in
            pool.call("POST", FeedbackPool.features, body: #"{"title":"Same","description":"The same client id."}"#,
                      token: key, headers: ["X-Device-ID": "sim-0"]).status
        }
        #expect(same == [201, 201, 429], "control: one client id is limited")
        var statuses = [Int]()
        for n in 1...20 {
            let body = #"{"title":"Idea \#(n)","description":"Please add idea number \#(n)."}"#
            statuses.append(pool.call("POST", FeedbackPool.features, body: body, token: key,
                                      headers: ["X-Device-ID": "sim-\(n)"]).status)
        }
        #expect(statuses.contains(429), "20 creates through one key in one day: \(statuses)")
    }

    /// SDK contract: `submitter_id` is the identified user id when there is one; the SDK builds
    /// the query with URLComponents, which leaves `+` (and `@`) as they are. A user id like
    /// `ann+test@example.com` makes the ticket list 400 ("a bare + is ambiguous"), so the SDK's
    /// `listTickets` fails for that user.
    @Test func aSubmitterIDWithAPlusAsURLComponentsSendsItListsTheTicket() throws {
        let pool = try FeedbackPool()
        #expect(pool.openTicket(submitter: "ann+test@example.com").status == 201)
        let escaped = pool.call("GET", Self.tickets, query: "submitter_id=ann%2Btest%40example.com")
        #expect(try SDKFeedback.decode([SDKFeedback.Ticket].self, escaped).count == 1, "control: %2B lists it")
        let r = pool.call("GET", Self.tickets, query: "submitter_id=ann+test@example.com")
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self).prefix(200))")
        let listed = (try? SDKFeedback.decode([SDKFeedback.Ticket].self, r)) ?? []
        #expect(listed.count == 1)
    }
}
