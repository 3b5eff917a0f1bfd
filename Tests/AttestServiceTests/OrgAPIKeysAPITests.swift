import AttestCore
@testable import AttestService
import AttestStore
import Testing

/// The org pool's API keys API (`OrgAPIKeysEndpoint`): as `attestctl apikey`, admin only.
@Suite struct OrgAPIKeysAPITests {
    static let path = OrgAPIKeysEndpoint.path

    @Test func createShowsTheKeyOnceAndItWorks() throws {
        let w = try OrgWorld()
        let made = w.call("POST", Self.path, body: #"{"name":"console CI","scope":"heartbeat"}"#)
        #expect(made.status == 201)
        #expect(made.response.headers.contains { $0.name == "Cache-Control" && $0.value == "no-store" })
        let key = try #require(made.json["key"]?.stringValue)
        let id = try #require(made.json["id"]?.stringValue)
        #expect(key.hasPrefix("aat_") && key.hasPrefix(id))
        #expect(made.json["scope"]?.stringValue == "heartbeat" && made.json["name"]?.stringValue == "console CI")
        let stored = try #require(try w.fixture.context.store.read { try $0.apiKey(id: id) })
        #expect(stored.org == "acme" && stored.scope == .heartbeat)
        let listed = w.call("GET", Self.path).json["api_keys"]?.arrayValue ?? []
        #expect(listed.contains { $0["id"]?.stringValue == id })
        #expect(listed.allSatisfy { $0["key"] == nil }, "the key is shown only at creation")
        #expect(!listed.contains { $0["id"]?.stringValue == String(w.globexKey.prefix(12)) }, "another org's key")
        // A key of scope all (the default) acts as admin at once; heartbeat is refused here.
        let admin = try #require(w.call("POST", Self.path, body: #"{"name":"ops"}"#).json["key"]?.stringValue)
        #expect(w.call("GET", Self.path, key: admin).status == 200)
        #expect(w.call("GET", Self.path, key: key).status == 403)
    }

    @Test func createRefusesBadInputNamingTheField() throws {
        let w = try OrgWorld()
        let before = try w.fixture.context.store.read { try $0.apiKeys().count }
        for (body, field) in [("{}", "name"), (#"{"name":""}"#, "name"),
                              (#"{"name":"\#(String(repeating: "n", count: 101))"}"#, "name"),
                              (#"{"name":5}"#, "name"), (#"{"name":"x","scope":"root"}"#, "scope"),
                              (#"{"name":"x","scope":"admin"}"#, "scope")] {
            let got = w.call("POST", Self.path, body: body)
            #expect(got.status == 400, "\(body)")
            #expect(got.json["error"]?.stringValue?.contains(field) == true, "\(body): \(got.json)")
        }
        #expect(w.call("POST", Self.path, body: #"{"name":"\#(String(repeating: "é", count: 100))"}"#).status == 201,
                "100 characters")
        #expect(try w.fixture.context.store.read { try $0.apiKeys().count } == before + 1)
    }

    @Test func revokeEndsTheKeyOnce() throws {
        let w = try OrgWorld()
        let made = w.call("POST", Self.path, body: #"{"name":"temp"}"#).json
        let (key, id) = (try #require(made["key"]?.stringValue), try #require(made["id"]?.stringValue))
        #expect(w.call("GET", Self.path, key: key).status == 200)
        let revoked = w.call("DELETE", Self.path + "/" + id)
        #expect(revoked.status == 200)
        #expect(revoked.json == ["id": .string(id), "revoked": true])
        #expect(w.call("GET", Self.path, key: key).status == 401, "a revoked key answers 401 at once")
        #expect(w.call("DELETE", Self.path + "/" + id).status == 409)
        #expect(w.call("DELETE", Self.path + "/aat_unknown1").status == 404)
        #expect(w.call("DELETE", Self.path + "/short").status == 404)
        #expect(w.call("PATCH", Self.path + "/" + id).status == 405)
    }

    @Test func everyCallNeedsAdmin() throws {
        let w = try OrgWorld()
        let org = try #require(try w.fixture.context.store.read { try $0.org(named: "acme") })
        for role in [OrgRole.viewer, .editor] {
            let caller = OrgCaller(org: org, role: role, actor: AuditActor(kind: .session, id: "c", name: "c", role: role, retainDays: 400))
            for method in ["GET", "POST", "DELETE"] {
                #expect(throws: ServiceError.self, "\(role) \(method)") {
                    try caller.require(OrgAPIKeysEndpoint.need(OrgWorld.request(method, Self.path)))
                }
            }
        }
        let admin = OrgCaller(org: org, role: .admin, actor: AuditActor(kind: .session, id: "c", name: "c", role: .admin, retainDays: 400))
        try admin.require(OrgAPIKeysEndpoint.need(OrgWorld.request("POST", Self.path)))
    }
}
