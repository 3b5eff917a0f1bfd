import AttestCore
import AttestMetrics
@testable import AttestService
import AttestStore
import Testing

/// Another organization's admin key (globex) aims at acme's device, app and API key through
/// every org pool call: each is 404 as an unknown id, and nothing of acme's changes.
@Suite struct OrgAttackerTests {
    @Test func anotherOrganizationsIdsAreUnknown() throws {
        let w = try OrgWorld()
        let victim = try w.device(0x11, fingerprint: "fp-victim", subject: "victim-user")
        let victimKey = String(w.acmeKey.prefix(12))
        let keyURL = OrgWorld.url(victim.keyID)
        let attacker = w.globexKey
        let devices = OrgDevicesEndpoint.path
        for action in ["block", "flag", "clear", "revoke"] {
            let got = w.call("POST", devices + "/" + keyURL + "/actions",
                             body: #"{"action":"\#(action)","reason":"x"}"#, key: attacker)
            #expect(got.status == 404, "\(action)")
            #expect(got.json["code"]?.stringValue == "not_found")
        }
        #expect(w.call("GET", devices + "/" + keyURL, key: attacker).status == 404)
        for q in [keyURL, String(keyURL.prefix(6)), victim.deviceID, "fp-victim", "victim-user"] {
            let got = w.call("GET", devices, query: "q=" + q, key: attacker)
            #expect(got.status == 200 && got.json["devices"] == [], "q=\(q)")
        }
        #expect(w.call("GET", devices, key: attacker).json["devices"] == [])
        #expect(w.call("GET", devices, query: "app_id=" + Fixture.appID, key: attacker).status == 404)
        let test = w.call("POST", OrgAppsEndpoint.path + "/" + Fixture.appID + "/claims-test", key: attacker)
        #expect(test.status == 404)
        // Its own app, naming acme's device: still unknown.
        let own = w.call("POST", OrgAppsEndpoint.path + "/" + OrgWorld.globexApp + "/claims-test",
                         body: #"{"device_key_id":"\#(keyURL)"}"#, key: attacker)
        #expect(own.status == 404)
        #expect(w.call("DELETE", OrgAPIKeysEndpoint.path + "/" + victimKey, key: attacker).status == 404)

        let after = try #require(try w.stored(victim.keyID))
        #expect(after.status == .active && after.operatorFlags == [], "the device is unchanged")
        #expect(try w.fixture.context.store.read { try $0.flagChanges(.of(victim)) }.isEmpty)
        #expect(try w.fixture.context.store.read { try $0.apiKey(id: victimKey) }?.revokedAt == nil)
        #expect(w.call("GET", OrgAPIKeysEndpoint.path).status == 200, "acme's key still works")
    }

    /// Paths under the pool's prefixes that no endpoint serves answer 404 JSON; the audit log
    /// and the console session are served (the audit log to this key; the session needs a cookie).
    @Test func unservedPathsAre404() throws {
        let w = try OrgWorld()
        #expect(w.call("GET", OrgRoute.auditPath).status == 200)
        #expect(w.call("GET", OrgRoute.consoleSessionPath).status == 401)
        for path in ["/api/v1/org/devicesX", "/api/v1/org/apps/x/y"] {
            let got = w.call("GET", path)
            #expect(got.status == 404, "\(path)")
            #expect(got.json["code"]?.stringValue == "not_found", "\(path)")
        }
        #expect(OrgRoute("/api/v1/org/devices/abc").logName == "org-devices")
        #expect(OrgRoute("/api/v1/org/apps").logName == "org-apps")
        #expect(OrgRoute("/api/v1/org/api-keys/x").logName == "org-api-keys")
        #expect(OrgRoute(OrgRoute.auditPath).logName == "org-audit")
        #expect(OrgRoute(OrgRoute.consoleSessionPath).logName == "console-session")
        for route in [OrgRoute.devices, .apps, .apiKeys, .audit, .consoleSession] {
            #expect(MetricsLayout.endpoints.contains(route.logName), "\(route) is counted under its name")
        }
    }
}
