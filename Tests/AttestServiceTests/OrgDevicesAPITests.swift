import AttestCore
@testable import AttestService
import AttestStore
import Foundation
import Testing

/// The org pool's devices API (`OrgDevicesEndpoint`): search by indexed lookups, the device
/// page (standing and why, risk, history, flag changes) and the admin's actions.
@Suite struct OrgDevicesAPITests {
    static let path = OrgDevicesEndpoint.path

    static func keys(_ body: JSONValue) -> [String] {
        (body["devices"]?.arrayValue ?? []).compactMap { $0["key_id"]?.stringValue }
    }

    @Test func searchFindsByKeyIdDeviceIdPrefixFingerprintAndSubject() throws {
        let w = try OrgWorld()
        let a = try w.device(0x11, fingerprint: "fp-alpha-1234567890", subject: "user-42")
        let b = try w.device(0x22)
        let c = try w.device(0x33, app: OrgWorld.acme2App)
        let url = OrgWorld.url(a.keyID)
        for q in [url, Base64.encode(a.keyID), "dev-app-17", "fp-alpha-1234567890", "user-42", String(url.prefix(6))] {
            let got = w.call("GET", Self.path, query: "q=" + q.replacingOccurrences(of: "/", with: "%2F"))
            #expect(got.status == 200, "\(q)")
            #expect(Self.keys(got.json) == [url], "q=\(q)")
        }
        let first = try #require(w.call("GET", Self.path, query: "q=" + url).json["devices"]?.arrayValue?.first)
        #expect(first["app_id"]?.stringValue == Fixture.appID)
        #expect(first["fingerprint"]?.stringValue == "fp-alpha-123", "the short fingerprint")
        #expect(first["status"]?.stringValue == "active")
        #expect(first["environment"]?.stringValue == "production")
        // Without q: the organization's devices; app_id narrows them.
        #expect(Set(Self.keys(w.call("GET", Self.path).json)) == Set([a, b, c].map { OrgWorld.url($0.keyID) }))
        let second = w.call("GET", Self.path, query: "app_id=" + OrgWorld.acme2App)
        #expect(Self.keys(second.json) == [OrgWorld.url(c.keyID)])
        #expect(Self.keys(w.call("GET", Self.path, query: "limit=2").json).count == 2)
        #expect(Self.keys(w.call("GET", Self.path, query: "q=nothing-like-it").json) == [])
    }

    @Test func searchRefusesBadInputNamingTheField() throws {
        let w = try OrgWorld()
        for (query, field) in [("limit=0", "limit"), ("limit=201", "limit"), ("limit=x", "limit"),
                               ("q=" + String(repeating: "a", count: 201), "q")] {
            let got = w.call("GET", Self.path, query: query)
            #expect(got.status == 400, "\(query)")
            #expect(got.json["error"]?.stringValue?.contains(field) == true, "\(query): \(got.json)")
        }
        #expect(w.call("GET", Self.path, query: "app_id=NOPE.app").status == 404)
        #expect(w.call("GET", Self.path, query: "limit=200").status == 200)
        #expect(w.call("GET", Self.path, key: .some(nil)).status == 401)
    }

    /// A scan without q stops at its budget and says so; matches outside the organization are
    /// read but never shown.
    @Test func theScanIsBoundedAndSaysWhenItStopped() throws {
        let w = try OrgWorld()
        for seed in UInt8(1)...40 { try w.device(seed, app: OrgWorld.globexApp, org: "globex") }
        let mine = try w.device(0xF0)
        let (found, truncated) = try w.fixture.context.store.read { txn -> ([DeviceRecord], Bool) in
            var s = OrgDeviceSearch(apps: [Fixture.appID], limit: 50, budget: 10)
            try s.run(nil, org: "acme", in: txn)
            return (s.found, s.truncated)
        }
        #expect(found.isEmpty && truncated, "40 other devices come first in keyId order; the budget is 10")
        let all = try w.fixture.context.store.read { txn -> [DeviceRecord] in
            var s = OrgDeviceSearch(apps: [Fixture.appID], limit: 50)
            try s.run(nil, org: "acme", in: txn)
            return s.found
        }
        #expect(all.map(\.keyID) == [mine.keyID])
    }

    @Test func aDevicePageSaysWhyRefreshWouldRefuseIt() throws {
        let w = try OrgWorld()
        let ok = try w.device(0x11, fingerprint: "fp-1", subject: "user-1")
        let page = w.call("GET", Self.path + "/" + OrgWorld.url(ok.keyID))
        #expect(page.status == 200)
        #expect(page.json["standing"]?["refused"]?.boolValue == false)
        #expect(page.json["risk"]?["factors"]?.arrayValue != nil)
        #expect(page.json["risk"]?["category"]?.stringValue != nil)
        #expect(page.json["attestations"]?.arrayValue?.first?["key_id"]?.stringValue == OrgWorld.url(ok.keyID))
        #expect(page.json["subject"]?["subject_id"]?.stringValue == "user-1")
        #expect(page.json["flag_changes"] == [])

        let revoked = try w.device(0x22, status: .revoked)
        let why = { (d: DeviceRecord) in w.call("GET", Self.path + "/" + OrgWorld.url(d.keyID)).json["standing"] }
        #expect(why(revoked)?["refused"]?.boolValue == true)
        #expect(why(revoked)?["why"]?.stringValue?.contains("revoked") == true)
        let invalidated = try w.device(0x33, status: .invalidated)
        #expect(why(invalidated)?["why"]?.stringValue?.contains("invalidated") == true)
        #expect(why(invalidated)?["why"]?.stringValue?.contains("409 reattest_required") == true)
        let development = try w.device(0x44, environment: .development)
        #expect(why(development)?["refused"]?.boolValue == true)
        #expect(why(development)?["why"]?.stringValue?.contains("environment policy is production") == true)
    }

    @Test func blockKeepsTheReasonAndRefusesEveryKeyOfTheFingerprint() throws {
        let w = try OrgWorld()
        let d = try w.device(0x11, fingerprint: "fp-shared")
        let sibling = try w.device(0x12, fingerprint: "fp-shared")
        let got = w.call("POST", Self.path + "/" + OrgWorld.url(d.keyID) + "/actions",
                         body: #"{"action":"block","reason":"chargeback fraud ring"}"#)
        #expect(got.status == 200)
        #expect(got.json["status"]?.stringValue == "blocked")
        #expect(got.json["flags"] == ["blocked"])
        #expect(got.json["standing"]?["refused"]?.boolValue == true)
        #expect(got.json["standing"]?["why"]?.stringValue?.contains("\"chargeback fraud ring\"") == true)
        #expect(got.json["flag_changes"]?.arrayValue?.last?["reason"]?.stringValue == "chargeback fraud ring")
        #expect(try w.stored(sibling.keyID)?.operatorFlags.contains(.blocked) == true, "the lineage, as the CLI")
        let page = w.call("GET", Self.path + "/" + OrgWorld.url(sibling.keyID))
        #expect(page.json["standing"]?["refused"]?.boolValue == true)

        let flagged = w.call("POST", Self.path + "/" + OrgWorld.url(d.keyID) + "/actions",
                             body: #"{"action":"clear","reason":"refunded"}"#)
        #expect(flagged.json["status"]?.stringValue == "active")
        #expect(try w.stored(d.keyID)?.operatorFlags == [])
        let jail = w.call("POST", Self.path + "/" + OrgWorld.url(d.keyID) + "/actions",
                          body: #"{"action":"flag","reason":"jailbreak tooling seen"}"#)
        #expect(jail.json["status"]?.stringValue == "flagged")
        #expect(jail.json["standing"]?["refused"]?.boolValue == false)
        #expect(jail.json["flag_changes"]?.arrayValue?.count == 3)
    }

    @Test func revokeRefusesRefresh() throws {
        let w = try OrgWorld()
        let d = try w.device(0x11)
        let got = w.call("POST", Self.path + "/" + OrgWorld.url(d.keyID) + "/actions",
                         body: #"{"action":"revoke","reason":"lost phone"}"#)
        #expect(got.status == 200)
        #expect(got.json["status"]?.stringValue == "revoked")
        #expect(try w.stored(d.keyID)?.status == .revoked)
        // The page says who revoked it and why (from the audit log, the one place the reason is kept).
        let why = try #require(got.json["standing"]?["why"]?.stringValue)
        #expect(why.contains("\"lost phone\"") && why.contains("403"), "\(why)")
        let audit = try w.fixture.context.store.read { try $0.auditEntries(org: "acme", limit: 5) }
        #expect(audit.first?.action == "device.revoke" && audit.first?.target == OrgDeviceWire.keyID(d.keyID)
                && audit.first?.actor == .apiKey && audit.first?.detail == "lost phone")
    }

    @Test func actionsRefuseBadInputAndUnknownKeys() throws {
        let w = try OrgWorld()
        let d = try w.device(0x11)
        let actions = Self.path + "/" + OrgWorld.url(d.keyID) + "/actions"
        for (body, field) in [(#"{"action":"block"}"#, "reason"), (#"{"action":"block","reason":""}"#, "reason"),
                              (#"{"action":"block","reason":"\#(String(repeating: "x", count: 501))"}"#, "reason"),
                              (#"{"action":"nuke","reason":"r"}"#, "action"), (#"{"reason":"r"}"#, "action"),
                              (#"{"action":7,"reason":"r"}"#, "action"), ("not json", "JSON")] {
            let got = w.call("POST", actions, body: body)
            #expect(got.status == 400, "\(body)")
            #expect(got.json["error"]?.stringValue?.contains(field) == true, "\(body): \(got.json)")
        }
        #expect(try w.stored(d.keyID)?.operatorFlags == [], "nothing changed")
        let unknown = OrgWorld.url([UInt8](repeating: 0x99, count: 32))
        #expect(w.call("GET", Self.path + "/" + unknown).status == 404)
        let act = w.call("POST", Self.path + "/" + unknown + "/actions", body: #"{"action":"block","reason":"r"}"#)
        #expect(act.status == 404)
        #expect(w.call("GET", Self.path + "/not-a-key").status == 404)
        #expect(w.call("DELETE", Self.path + "/" + OrgWorld.url(d.keyID)).status == 405)
    }

    /// Reads need any role, actions admin (a viewer is refused before anything is read).
    @Test func aViewerMayReadButNotAct() throws {
        let w = try OrgWorld()
        let org = try #require(try w.fixture.context.store.read { try $0.org(named: "acme") })
        let viewer = OrgCaller(org: org, role: .viewer, actor: AuditActor(kind: .session, id: "viewer", name: "viewer", role: .viewer, retainDays: 400))
        let action = OrgWorld.request("POST", Self.path + "/x/actions")
        #expect(OrgDevicesEndpoint.need(action) == .admin)
        #expect(throws: ServiceError.self) { try viewer.require(OrgDevicesEndpoint.need(action)) }
        #expect(OrgDevicesEndpoint.need(OrgWorld.request("GET", Self.path)) == .read)
        try viewer.require(OrgDevicesEndpoint.need(OrgWorld.request("GET", Self.path)))
        let editor = OrgCaller(org: org, role: .editor, actor: AuditActor(kind: .session, id: "editor", name: "editor", role: .editor, retainDays: 400))
        #expect(throws: ServiceError.self) { try editor.require(OrgDevicesEndpoint.need(action)) }
    }

    /// How long a search takes with many devices in the store (printed; the answers checked).
    @Test func searchCostWithThousandsOfDevices() throws {
        let w = try OrgWorld()
        let count = 5000
        try w.fixture.context.store.write([.durable]) { txn in
            for i in 0..<count {
                var key = [UInt8](repeating: 0, count: 32)
                key[0] = UInt8(i & 0xFF); key[1] = UInt8(i >> 8); key[31] = 0xAB
                try txn.put(DeviceRecord(keyID: key, deviceID: "bulk-\(i)", appID: OrgWorld.globexApp,
                                         publicKey: [4], environment: .production, createdAt: w.now))
            }
        }
        let mine = try w.device(0xFE, fingerprint: "fp-mine")
        func timed(_ query: String) -> (Double, [String]) {
            let start = DispatchTime.now().uptimeNanoseconds
            let got = w.call("GET", Self.path, query: query)
            return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6, Self.keys(got.json))
        }
        let scan = timed("")
        let exact = timed("q=" + OrgWorld.url(mine.keyID))
        let prefix = timed("q=" + String(OrgWorld.url(mine.keyID).prefix(8)))
        let fingerprint = timed("q=fp-mine")
        #expect(scan.1 == [OrgWorld.url(mine.keyID)])
        #expect(exact.1 == scan.1 && prefix.1 == scan.1 && fingerprint.1 == scan.1)
        print("org devices search over \(count + 1) devices (\(Fixture.onPostgres ? "postgres" : "lmdb")): "
              + "no q (scan) \(scan.0) ms, exact keyId \(exact.0) ms, keyId prefix \(prefix.0) ms, "
              + "fingerprint \(fingerprint.0) ms")
    }
}
