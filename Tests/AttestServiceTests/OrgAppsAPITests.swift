import AttestCore
@testable import AttestService
import AttestStore
import Testing

/// The org pool's apps API (`OrgAppsEndpoint`): the organization's apps with their policy and
/// custom claims, and `attestctl claims test` as JSON.
@Suite struct OrgAppsAPITests {
    static let path = OrgAppsEndpoint.path

    static func addClaims(_ w: OrgWorld) throws {
        try w.fixture.context.store.write([.durable]) { txn in
            var app = try #require(try txn.app(id: Fixture.appID))
            app.customClaimsJSON = CustomClaims.encode([
                ClaimRule(key: "tier", value: "gold",
                          condition: try ClaimCondition(text: "appVersion ge 2.0", claim: "tier")),
                ClaimRule(key: "beta", value: true, condition: nil),
            ])
            app.minAppVersion = "1.5"
            try txn.put(app)
        }
    }

    @Test func listShowsOnlyTheOrganizationsAppsWithPolicyAndClaims() throws {
        let w = try OrgWorld()
        try Self.addClaims(w)
        let got = w.call("GET", Self.path)
        #expect(got.status == 200)
        let apps = try #require(got.json["apps"]?.arrayValue)
        #expect(apps.compactMap { $0["id"]?.stringValue }.sorted() == [OrgWorld.acme2App, Fixture.appID].sorted())
        let main = try #require(apps.first { $0["id"]?.stringValue == Fixture.appID })
        #expect(main["environments"] == ["production"])
        #expect(main["policy"]?["environment_policy"]?.stringValue == "production")
        #expect(main["policy"]?["min_app_version"]?.stringValue == "1.5")
        #expect(main["custom_claims"]?.arrayValue?.map { $0["key"]?.stringValue } == ["tier", "beta"])
        #expect(main["custom_claims"]?.arrayValue?.first?["when"]?.stringValue
                == (try ClaimCondition(text: "appVersion ge 2.0", claim: "tier")).text)
        #expect(main["custom_claims"]?.arrayValue?.last?["when"] == .null)
        let second = try #require(apps.first { $0["id"]?.stringValue == OrgWorld.acme2App })
        #expect(second["environments"] == ["production", "development"])
        #expect(w.call("GET", Self.path, key: w.globexKey).json["apps"]?.arrayValue?.map { $0["id"]?.stringValue }
                == [OrgWorld.globexApp])
    }

    @Test func claimsTestExplainsAProfileAndAStoredDevice() throws {
        let w = try OrgWorld()
        try Self.addClaims(w)
        let test = Self.path + "/" + Fixture.appID + "/claims-test"
        let described = w.call("POST", test, body: #"{"profile":{"appVersion":"2.1"}}"#)
        #expect(described.status == 200)
        #expect(described.json["custom_claims"] == ["tier": "gold", "beta": true])
        #expect(described.json["claims"]?.arrayValue?.map { $0["applied"]?.boolValue } == [true, true])
        #expect(described.json["risk_category"]?.stringValue != nil && described.json["factors"]?.arrayValue != nil)
        let old = w.call("POST", test, body: #"{"profile":{"appVersion":"1.0"}}"#)
        #expect(old.json["custom_claims"] == ["beta": true])
        #expect(old.json["claims"]?.arrayValue?.first?["applied"]?.boolValue == false)
        #expect(old.json["claims"]?.arrayValue?.first?["why"]?.stringValue?.isEmpty == false)
        let empty = w.call("POST", test)
        #expect(empty.status == 200 && empty.json["custom_claims"] == ["beta": true])

        let d = try w.device(0x11)
        #expect(w.call("POST", test, body: #"{"device_key_id":"\#(OrgWorld.url(d.keyID))"}"#).status == 200)
        #expect(w.call("POST", test, body: #"{"device_id":"\#(d.deviceID)"}"#).status == 200)
        let other = try w.device(0x22, app: OrgWorld.acme2App)
        #expect(w.call("POST", test, body: #"{"device_key_id":"\#(OrgWorld.url(other.keyID))"}"#).status == 404,
                "a device of another app")
    }

    @Test func claimsTestRefusesBadInput() throws {
        let w = try OrgWorld()
        let test = Self.path + "/" + Fixture.appID + "/claims-test"
        for (body, field) in [(#"{"profile":"x"}"#, "profile"), (#"{"profile":{"appVersion":5}}"#, "appVersion"),
                              (#"{"device_id":"a","profile":{}}"#, "profile"), (#"{"device_id":7}"#, "device_id")] {
            let got = w.call("POST", test, body: body)
            #expect(got.status == 400, "\(body)")
            #expect(got.json["error"]?.stringValue?.contains(field) == true, "\(body): \(got.json)")
        }
        #expect(w.call("POST", Self.path + "/NOPE.app/claims-test").status == 404)
        #expect(w.call("GET", test).status == 405)
        #expect(w.call("GET", Self.path + "/" + Fixture.appID).status == 404)
    }
}
