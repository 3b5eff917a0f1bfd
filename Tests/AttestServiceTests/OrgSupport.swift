import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation

/// Two organizations for the org pool's tests: `acme` (the fixture's app, a second app
/// `acme2`) and `globex` (its own app), an admin API key for each, and devices stored directly.
final class OrgWorld {
    let fixture: Fixture
    let acmeKey: String
    let globexKey: String
    static let globexApp = "ZZZZZ99999.com.globex.app"
    static let acme2App = "ABCDE12345.com.example.second"
    var now: Timestamp { fixture.clock.now() }

    init(tier: Tier = .pro) throws {
        fixture = try Fixture(tier: tier)
        acmeKey = try WebhooksAPITests.API.makeKey(fixture, org: "acme")
        globexKey = try WebhooksAPITests.API.makeKey(fixture, org: "globex")
        let created = fixture.clock.now()
        try fixture.context.store.write { txn in
            try txn.put(AppRecord(teamID: "ZZZZZ99999", bundleID: "com.globex.app", org: "globex", createdAt: created))
            try txn.put(AppRecord(teamID: "ABCDE12345", bundleID: "com.example.second", org: "acme", policy: .both,
                                  createdAt: created))
        }
    }

    /// Stores a device of `appID` (its key id is `seed` repeated), its fingerprint's lineage and
    /// its subject link; returns it.
    @discardableResult
    func device(_ seed: UInt8, app: String = Fixture.appID, fingerprint: String = "", subject: String = "",
                environment: AppAttestEnvironment = .production, status: DeviceRecord.Status = .active,
                org: String = "acme") throws -> DeviceRecord {
        var d = DeviceRecord(keyID: [UInt8](repeating: seed, count: 32), deviceID: "dev-\(app.suffix(3))-\(seed)",
                             appID: app, publicKey: [4] + [UInt8](repeating: 1, count: 64), environment: environment,
                             status: status, createdAt: now, fingerprint: fingerprint)
        try fixture.context.store.write([.durable]) { txn in
            if !fingerprint.isEmpty { try txn.noteFingerprint(fingerprint, appID: app, keyID: d.keyID, at: now) }
            if !subject.isEmpty { try txn.link(&d, to: subject, org: org, now: now) }
            try txn.put(d)
        }
        return d
    }

    func stored(_ keyID: [UInt8]) throws -> DeviceRecord? {
        try fixture.context.store.read { try $0.device(keyID: keyID) }
    }

    /// A call as nginx passes it to `org.sock`, with `key` as the bearer (nil: none).
    func call(_ method: String, _ path: String, query: String = "", body: String? = nil,
              key: String?? = .none) -> (status: Int, json: JSONValue, response: Response) {
        var params = ["REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_ID": "req-org",
                      "REMOTE_ADDR": "127.0.0.1", "QUERY_STRING": query,
                      "REQUEST_URI": path + (query.isEmpty ? "" : "?" + query)]
        if let bearer = key ?? acmeKey { params["HTTP_AUTHORIZATION"] = "Bearer " + bearer }
        let request = Request(method: method, path: path, query: query, params: params, body: Array((body ?? "").utf8))
        let response = Endpoint.org.handle(request, fixture.context)
        return (response.status, (try? JSONParser.parse(response.body)) ?? .null, response)
    }

    static func url(_ keyID: [UInt8]) -> String { Base64.encode(keyID, url: true) }

    static func request(_ method: String, _ path: String) -> Request {
        Request(method: method, path: path, query: "", params: ["REQUEST_METHOD": method, "DOCUMENT_URI": path],
                body: [])
    }
}
