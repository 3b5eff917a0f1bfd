import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Testing

/// `GET /api/v1/org/flag-evaluation` in the flags pool: what a device would get, and why,
/// from the same evaluation as the flags call (`CompiledFeatureFlags.explain`).
@Suite struct OrgFlagEvaluationTests {
    static func evaluate(_ w: OrgWorld, _ query: String, key: String? = nil) -> (Int, JSONValue) {
        let path = FlagEvaluationEndpoint.path
        let params = ["REQUEST_METHOD": "GET", "DOCUMENT_URI": path, "REQUEST_ID": "req-fe", "REMOTE_ADDR": "127.0.0.1",
                      "QUERY_STRING": query, "HTTP_AUTHORIZATION": "Bearer " + (key ?? w.acmeKey)]
        let response = Endpoint.flags.handle(Request(method: "GET", path: path, query: query, params: params, body: []),
                                             w.fixture.context)
        return (response.status, (try? JSONParser.parse(response.body)) ?? .null)
    }

    @Test func anOverrideARuleAndTheDefaultSayWhy() throws {
        let w = try OrgWorld()
        let d = try w.device(0x11)
        let other = try w.device(0x12)
        _ = try FeatureFlagAdmin.write(store: w.fixture.context.store, appID: Fixture.appID, org: "acme", actor: .cli,
                                       now: w.now, random: SystemRandom(), queueEvents: false) { a, txn in
            _ = try a.addFlag(key: "beta", type: .bool, value: "false", environment: nil, description: "", in: txn)
            _ = try a.addFlag(key: "color", type: .string, value: "\"red\"", environment: nil, description: "", in: txn)
            _ = try a.setOverride(key: "beta", subject: .device(d.deviceID), value: "true", expiresAt: nil, note: "",
                                  in: txn)
        }
        let (status, got) = Self.evaluate(w, "app_id=\(Fixture.appID)&device_key_id=\(OrgWorld.url(d.keyID))")
        #expect(status == 200)
        #expect(got["flags"] == ["beta": true, "color": "red"])
        #expect(got["why"]?["beta"]?.stringValue?.contains("override") == true, "\(got)")
        #expect(got["why"]?["color"]?.stringValue?.contains("default") == true, "\(got)")
        #expect(got["device"]?["device_id"]?.stringValue == d.deviceID)
        let theirs = Self.evaluate(w, "app_id=\(Fixture.appID)&device_id=\(other.deviceID)").1
        #expect(theirs["flags"] == ["beta": false, "color": "red"])
        let none = Self.evaluate(w, "app_id=\(Fixture.appID)")
        #expect(none.0 == 200 && none.1["device"] == .null && none.1["flags"]?["beta"] == false)
    }

    @Test func badInputAndOtherOrganizations() throws {
        let w = try OrgWorld()
        let d = try w.device(0x11)
        #expect(Self.evaluate(w, "").0 == 400)
        #expect(Self.evaluate(w, "app_id=\(Fixture.appID)&device_id=a&device_key_id=b").0 == 400)
        #expect(Self.evaluate(w, "app_id=\(Fixture.appID)&device_id=nope").0 == 404)
        #expect(Self.evaluate(w, "app_id=\(Fixture.appID)", key: w.globexKey).0 == 404, "another org's app")
        #expect(Self.evaluate(w, "app_id=\(OrgWorld.globexApp)&device_key_id=\(OrgWorld.url(d.keyID))",
                              key: w.globexKey).0 == 404, "another org's device under its own app")
    }
}
