import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Testing

/// Review #43 (the operator console's server side, read as an attacker): each test shows one
/// finding and FAILS while the finding stands. They change no code; the report names the
/// file and line of each.
@Suite struct ConsoleReviewTests {
    typealias Console = ConsoleSessionTests.Console
    static let app = "app_id=" + Fixture.appID
    static let flagPath = "/api/v1/org/flags/dark_mode"

    /// Whether `text` holds a C0/C1 control character (a newline, ESC, CR, …): what
    /// `attestctl audit` would print raw into the operator's terminal.
    static func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Every text field of `org`'s newest audit entries that holds a control character.
    static func controlFields(_ fixture: Fixture, org: String = "acme") throws -> [String] {
        let entries = try fixture.context.store.read { try $0.auditEntries(org: org, limit: 500) }
        return entries.flatMap { e in
            [("action", e.action), ("target", e.target), ("detail", e.detail), ("actorID", e.actorID),
             ("actorName", e.actorName)].filter { hasControl($0.1) }
                .map { "\(e.action).\($0.0): \($0.1.debugDescription)" }
        }
    }

    // MARK: login CSRF

    /// Finding: `POST /api/v1/console/session` checks no `Origin` (and `JSONBody` ignores the
    /// Content-Type), so another site's `<form enctype="text/plain" method="post">` — a
    /// top-level navigation whose body reads `{"token":"…","x":"="}` — signs the victim's
    /// browser in to the attacker's session, replacing the victim's own cookie (login CSRF).
    /// Every other change with the cookie refuses a foreign Origin; this one should too.
    @Test func aSignInPostedByAnotherSiteIsRefused() throws {
        let c = try Console()
        let attackersLink = try c.link(role: .viewer)
        let r = c.session("POST", body: #"{"token":"\#(attackersLink)","x":"="}"#,
                          headers: ["Origin": "https://evil.example"])
        #expect(r.status == 403, "a sign-in from https://evil.example got \(r.status)")
        #expect(!r.headers.contains { $0.name == "Set-Cookie" }, "and it set the session cookie")
        // The same link from the console's own page still works (the test is not vacuous).
        let own = c.session("POST", body: #"{"token":"\#(attackersLink)"}"#,
                            headers: ["Origin": "https://" + c.host])
        #expect(own.status == 201 || r.status == 201, "one of the two sign-ins used the link")
    }

    // MARK: audit log forgery

    /// Finding: an editor's text reaches the audit log with control characters (here a
    /// flag rule's name: only its length is checked), and `attestctl audit` prints the table
    /// raw: a newline starts a forged row, ESC [1A ESC [2K erases the row above on the
    /// operator's terminal. The same holds for ticket replies, comments and release-note
    /// titles (multi-line by nature): the audit record (or its CLI rendering) must escape them.
    @Test func anEditorCannotWriteControlCharactersIntoTheAuditLog() throws {
        let c = try Console()
        c.signIn(try c.link(role: .editor))
        #expect(c.flags("POST", query: "", body: ConsoleSessionTests.newFlag, csrf: c.csrf).0 == 201)
        let rule = #"{"name":"\u001b[1A\u001b[2K\n2026-06-01T11:00:00Z  attestctl (root)","#
            + #""conditions":[{"attribute":"riskScore","operator":"lte","value":20}],"value":true}"#
        let added = c.flags("POST", Self.flagPath + "/rules", query: Self.app, body: rule, csrf: c.csrf)
        #expect(added.0 == 201 || added.0 == 400, "\(added)")
        #expect(try c.fixture.context.store.read { try $0.auditEntries(org: "acme", limit: 10) }.count >= 2)
        let bad = try Self.controlFields(c.fixture)
        #expect(bad.isEmpty, "audit fields with control characters: \(bad)")
    }

    /// Finding: an API key's name (`POST /api/v1/org/api-keys`, 1…100 characters of anything)
    /// becomes the WHO of every entry that key makes, printed unshortened by `attestctl audit`:
    /// a key named with ESC/newline rewrites or forges rows. (`console login --name` refuses
    /// newlines; the API refuses nothing.)
    @Test func anAPIKeyNameCannotCarryControlCharacters() throws {
        let w = try OrgWorld()
        let made = w.call("POST", OrgAPIKeysEndpoint.path,
                          body: #"{"name":"ci\u001b[2K\r\n2026-06-01T11:00:00Z  attestctl (root)  apikey.revoke"}"#)
        if made.status == 201, let key = made.json["key"]?.stringValue {
            // The key then acts: its name is the actor of the entry.
            let flag = Fixture.request("POST", FlagsAdminEndpoint.flagsPath, body: ConsoleSessionTests.newFlag,
                                       headers: ["Authorization": "Bearer " + key])
            #expect(Endpoint.flags.handle(flag, w.fixture.context).status == 201)
        } else {
            #expect(made.status == 400, "\(made.status)")
        }
        let bad = try Self.controlFields(w.fixture)
        #expect(bad.isEmpty, "audit fields with control characters: \(bad)")
    }

    // MARK: audit flood

    /// Finding: who revoked a device and why is read only from the organization's newest
    /// 2,000 audit entries (`OrgDevicesEndpoint.revokeSearch`), and nothing bounds how many
    /// entries an organization writes (it was read from the newest 2,000: now `revocations`). An editor — below the admin who revoked — pushes the
    /// revocation off the device's page with 2,000 ordinary flag changes, within the default
    /// `flags.writesPerOrganizationPerMinute` (60: one every 2 s here, about 67 minutes); the
    /// page then says only "revoked by an operator", with no one and no reason.
    @Test func anEditorCannotPushARevocationOffTheDevicePage() throws {
        let w = try OrgWorld()
        let d = try w.device(0x21)
        let page = OrgDevicesAPITests.path + "/" + OrgWorld.url(d.keyID)
        let revoked = w.call("POST", page + "/actions", body: #"{"action":"revoke","reason":"stolen phone"}"#)
        #expect(revoked.status == 200)
        #expect(revoked.json["standing"]?["why"]?.stringValue?.contains("stolen phone") == true)

        let c = try Console(fixture: w.fixture)
        c.signIn(try c.link(role: .editor))
        #expect(c.flags("POST", query: "", body: ConsoleSessionTests.newFlag, csrf: c.csrf).0 == 201)
        var refused = 0
        for i in 0..<2_000 {
            w.fixture.clock.advance(2)
            let put = c.flags("PUT", Self.flagPath, query: Self.app, body: #"{"value":\#(i % 2 == 0)}"#, csrf: c.csrf)
            if put.0 != 200 { refused += 1 }
        }
        #expect(refused == 0, "the editor's flag changes stayed within the write limit")
        let why = w.call("GET", page).json["standing"]?["why"]?.stringValue ?? ""
        #expect(why.contains("stolen phone"), "the device page after the flood: \(why)")
    }

    // MARK: per-organization bounds

    /// Finding: nothing bounds an organization's API keys (no count, no rate), unlike its
    /// webhook endpoints (`webhooks.endpointsPerOrganization`). One admin session (or one
    /// leaked key) can fill the store, and every organization's `GET /api/v1/org/api-keys`
    /// (and each apikey.create's audit entry) pays for it: the list reads every key of every
    /// organization (`txn.apiKeys()`, then filtered, OrgAPIKeysEndpoint.swift:37).
    @Test func anOrganizationsAPIKeysAreBounded() throws {
        let w = try OrgWorld()
        var refusal: Int?
        for i in 0..<1_000 {
            let made = w.call("POST", OrgAPIKeysEndpoint.path, body: #"{"name":"k\#(i)"}"#)
            if made.status != 201 { refusal = made.status; break }
        }
        #expect(refusal == 429, "1,000 API keys created for one organization without a refusal")
    }

    /// Finding: moderation writes (`PATCH /api/v1/org/feedback/:id`, tickets, replies), device
    /// actions and API key creation charge no per-organization bucket (flag and webhook writes
    /// do: `flags.writesPerOrganizationPerMinute`, `WebhookAPILimits.chargeWrite`), and each
    /// one appends an audit entry that only the 400-day retention removes. Any editor (here an
    /// API key; an editor session may make the same call) toggles a request's status as fast as
    /// the pool answers: the organization's audit log, and the
    /// durable store every tenant shares, grow without bound (here 1,000 entries in the same
    /// second, none refused).
    @Test func moderationWritesAreBoundedPerOrganization() throws {
        let admin = try FeedbackModerationTests.Admin()
        let id = try #require(FeedbackPool.json(admin.pool.create())["id"]?.stringValue)
        var refusal: Int?
        for i in 0..<1_000 {
            let status = i % 2 == 0 ? "planned" : "pending"
            let r = admin.call("PATCH", FeedbackModerationTests.orgFeedback + "/" + id,
                               body: #"{"status":"\#(status)"}"#)
            if r.0 != 200 { refusal = r.0; break }
        }
        let logged = try admin.pool.context.store.read { try $0.auditEntries(org: "acme", limit: 2_000) }
            .filter { $0.action == "feedback.status" }.count
        #expect(refusal == 429, "\(logged) status changes of one request audited in one second, none refused")
    }
}
