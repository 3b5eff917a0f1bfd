import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Testing

/// Console sign-in and sessions as a second org API credential (`ConsoleSignIn`,
/// `ConsoleSessionEndpoint`, `OrgCaller`): one-time links, the cookie's attributes, CSRF and
/// Origin on changes, roles, logout, and an attacker holding another organization's session.
@Suite struct ConsoleSessionTests {
    static let flagsPath = "/api/v1/org/flags"
    static let app = "app_id=" + Fixture.appID
    static let cli = AuditActor(kind: .cli, id: "tester", name: "tester", role: nil, retainDays: 400)

    final class Console {
        let fixture: Fixture
        var cookie = ""
        var csrf = ""
        var host = "console.example"

        init(fixture: Fixture? = nil) throws { self.fixture = try fixture ?? Fixture() }

        var ctx: ServiceContext { fixture.context }

        func link(org: String = "acme", role: OrgRole = .admin, minutes: Int = 15) throws -> String {
            try ConsoleSignIn.makeLink(org: org, role: role, name: "Pat", minutes: minutes, store: ctx.store,
                                       random: SystemRandom(), now: fixture.clock.now(), by: ConsoleSessionTests.cli)
        }

        func request(_ method: String, _ path: String, query: String = "", body: String? = nil,
                     headers: [String: String] = [:]) -> Request {
            var params = ["REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_ID": "req-console",
                          "REMOTE_ADDR": "127.0.0.1", "QUERY_STRING": query, "HTTP_HOST": host]
            if !cookie.isEmpty { params["HTTP_COOKIE"] = "theme=dark; \(ConsoleCookie.name)=\(cookie)" }
            for (k, v) in headers { params["HTTP_" + k.uppercased().replacingOccurrences(of: "-", with: "_")] = v }
            return Request(method: method, path: path, query: query, params: params, body: Array((body ?? "").utf8))
        }

        func session(_ method: String, body: String? = nil, headers: [String: String] = [:]) -> Response {
            let r = request(method, ConsoleSessionEndpoint.path, body: body, headers: headers)
            return ctx.respond(r, endpoint: "console") { _ in try ConsoleSessionEndpoint.route(r, ctx) }
        }

        /// Signs in with `token`; keeps the cookie and CSRF token on success.
        @discardableResult
        func signIn(_ token: String) -> Response {
            let r = session("POST", body: #"{"token":"\#(token)"}"#)
            if r.status == 201, let set = r.headers.first(where: { $0.name == "Set-Cookie" })?.value {
                cookie = String(set.split(separator: ";")[0].dropFirst(ConsoleCookie.name.count + 1))
                csrf = json(r)["session"]?["csrf"]?.stringValue ?? ""
            }
            return r
        }

        func flags(_ method: String, _ path: String = ConsoleSessionTests.flagsPath, query: String = ConsoleSessionTests.app,
                   body: String? = nil, csrf: String? = nil, origin: String? = nil) -> (Int, JSONValue) {
            var headers = [String: String]()
            if let csrf { headers["X-CSRF-Token"] = csrf }
            if let origin { headers["Origin"] = origin }
            let r = Endpoint.flags.handle(request(method, path, query: query, body: body, headers: headers), ctx)
            return (r.status, json(r))
        }

        func json(_ r: Response) -> JSONValue { (try? JSONParser.parse(r.body)) ?? .null }
    }

    static let newFlag = #"{"app_id":"\#(Fixture.appID)","key":"dark_mode","type":"bool","value":false}"#

    @Test func aLinkWorksOnceAndSetsAStrictHttpOnlySecureCookie() throws {
        let c = try Console()
        let token = try c.link()
        let r = c.signIn(token)
        #expect(r.status == 201)
        let set = try #require(r.headers.first { $0.name == "Set-Cookie" }?.value)
        #expect(set.hasPrefix("__Host-attestedge_console="))
        for attribute in ["Path=/", "HttpOnly", "Secure", "SameSite=Strict", "Max-Age=28800"] {
            #expect(set.contains("; " + attribute), "cookie attribute \(attribute)")
        }
        #expect(!set.contains("Domain"), "a __Host- cookie has no Domain")
        let session = c.json(r)["session"]
        #expect(session?["org"] == "acme" && session?["role"] == "admin" && session?["name"] == "Pat")
        #expect(c.session("GET").status == 200)
        // The same link again, by anyone: refused.
        let again = try Console(fixture: c.fixture)
        #expect(again.signIn(token).status == 401)
        #expect(again.session("GET").status == 401, "no cookie, no session")
    }

    @Test func anExpiredLinkOrAForgedOneIsRefused() throws {
        let c = try Console()
        let token = try c.link(minutes: 1)
        c.fixture.clock.advance(61)
        #expect(c.signIn(token).status == 401)
        #expect(c.signIn(Base64.encode(Array(repeating: 7, count: 32), url: true)).status == 401)
        #expect(c.signIn("not-a-token").status == 401)
    }

    @Test func theCookieAuthenticatesTheOrgAPIAndChangesNeedTheCSRFTokenFromThisHost() throws {
        let c = try Console()
        c.signIn(try c.link())
        #expect(c.flags("GET").0 == 200, "a read needs only the cookie")
        #expect(c.flags("POST", query: "", body: Self.newFlag).0 == 403, "no CSRF token")
        #expect(c.flags("POST", query: "", body: Self.newFlag, csrf: Base64.encode(Array(repeating: 1, count: 32), url: true)).0 == 403,
                "another token")
        #expect(c.flags("POST", query: "", body: Self.newFlag, csrf: c.csrf, origin: "https://evil.example").0 == 403,
                "a page of another origin")
        #expect(c.flags("GET").1["flags"]?.arrayValue?.isEmpty == true, "nothing was created by the refused calls")
        #expect(c.flags("POST", query: "", body: Self.newFlag, csrf: c.csrf, origin: "https://console.example").0 == 201)
        #expect(c.flags("GET").1["flags"]?.arrayValue?.count == 1)
    }

    @Test func aTamperedOrEndedOrExpiredSessionIsRefused() throws {
        let c = try Console()
        c.signIn(try c.link())
        let good = c.cookie
        var bytes = try #require(Base64.decode(good))
        bytes[40] ^= 1
        c.cookie = Base64.encode(bytes, url: true)
        #expect(c.flags("GET").0 == 401, "the right id with another secret")
        c.cookie = good
        #expect(c.flags("GET").0 == 200)
        c.fixture.clock.advance(8 * 3600)
        #expect(c.flags("GET").0 == 401, "expired after console.sessionHours")

        let d = try Console(fixture: c.fixture)
        d.signIn(try d.link())
        let id = try #require(d.json(d.session("GET"))["session"]?["id"]?.stringValue)
        #expect(try ConsoleSignIn.end(idHex: id, store: d.ctx.store, now: d.fixture.clock.now(), by: Self.cli))
        #expect(d.flags("GET").0 == 401, "console logout ends it at once")
    }

    @Test func signingOutNeedsTheCSRFTokenAndClearsTheCookie() throws {
        let c = try Console()
        c.signIn(try c.link())
        #expect(c.session("DELETE").status == 403, "a cross-site page must not sign people out either")
        let r = c.session("DELETE", headers: ["X-CSRF-Token": c.csrf])
        #expect(r.status == 200)
        #expect(r.headers.first { $0.name == "Set-Cookie" }?.value.contains("Max-Age=0") == true)
        #expect(c.session("GET").status == 401)
    }

    @Test func rolesLimitWhatASessionMayChange() throws {
        let c = try Console()
        c.signIn(try c.link(role: .viewer))
        #expect(c.flags("GET").0 == 200, "a viewer reads")
        #expect(Endpoint.webhooks.handle(c.request("GET", WebhooksEndpoint.path), c.ctx).status == 403,
                "webhook URLs may hold secrets: admins only, reads too")
        let refused = c.flags("POST", query: "", body: Self.newFlag, csrf: c.csrf)
        #expect(refused.0 == 403 && refused.1["error"]?.stringValue?.contains("editor") == true)

        let e = try Console(fixture: c.fixture)
        e.signIn(try e.link(role: .editor))
        #expect(e.flags("POST", query: "", body: Self.newFlag, csrf: e.csrf).0 == 201, "an editor changes flags")
        var headers = ["X-CSRF-Token": e.csrf]
        headers["Content-Type"] = "application/json"
        let hook = e.request("POST", WebhooksEndpoint.path, body: #"{"url":"https://hooks.example.com/in"}"#,
                             headers: headers)
        #expect(Endpoint.webhooks.handle(hook, e.ctx).status == 403, "webhooks need admin")
        let usage = e.request("GET", UsageEndpoint.path)
        #expect(Endpoint.mad.handle(usage, e.ctx).status == 200, "any role reads usage")
    }

    @Test func anotherOrganizationsSessionReachesNothingOfThisOne() throws {
        let c = try Console()
        try c.ctx.store.write { txn in try txn.put(OrgRecord(name: "rival", tier: .pro, createdAt: c.fixture.clock.now())) }
        c.signIn(try c.link(org: "rival", role: .admin))
        #expect(c.flags("GET").0 == 404, "acme's app is not found for rival")
        #expect(c.flags("POST", query: "", body: Self.newFlag, csrf: c.csrf).0 == 404)
        let usage = c.request("GET", UsageEndpoint.path)
        let answer = Endpoint.mad.handle(usage, c.ctx)
        #expect(answer.status == 200 && c.json(answer)["apps"]?.arrayValue?.isEmpty == true,
                "usage is rival's own: no apps (acme's app is not in it)")
        let audit = c.request("GET", AuditEndpoint.path)
        let entries = c.json(c.ctx.respond(audit, endpoint: "audit") { _ in try AuditEndpoint.route(audit, c.ctx) })
        let actions = entries["entries"]?.arrayValue?.compactMap { $0["action"]?.stringValue } ?? []
        #expect(actions == ["console.sign_in", "console.link"], "only rival's own entries")
    }

    @Test func changesAreAuditedWithTheSessionNewestFirstAndPaged() throws {
        let c = try Console()
        c.signIn(try c.link(role: .editor))
        #expect(c.flags("POST", query: "", body: Self.newFlag, csrf: c.csrf).0 == 201)
        let sessionID = try #require(c.json(c.session("GET"))["session"]?["id"]?.stringValue)
        func page(_ query: String) -> JSONValue {
            let r = c.request("GET", AuditEndpoint.path, query: query)
            return c.json(c.ctx.respond(r, endpoint: "audit") { _ in try AuditEndpoint.route(r, c.ctx) })
        }
        let all = try #require(page("")["entries"]?.arrayValue)
        #expect(all.first?["action"] == "flag.create" && all.first?["target"] == "dark_mode")
        #expect(all.first?["actor"]?["kind"] == "session" && all.first?["actor"]?["id"]?.stringValue == sessionID
                && all.first?["actor"]?["name"] == "Pat" && all.first?["actor"]?["role"] == "editor")
        let first = page("limit=1")
        #expect(first["entries"]?.arrayValue?.count == 1)
        let next = try #require(first["next"]?.stringValue)
        let second = page("limit=1&before=" + next)
        #expect(second["entries"]?.arrayValue?.first?["action"] == all[1]["action"])
        #expect(page("before=nonsense")["code"] == "bad_request")
    }
}
