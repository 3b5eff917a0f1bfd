import AttestCore
@testable import AttestService
import AttestStore
import FastCGI
import Foundation
import Testing

/// The flags pool's device endpoints as the SDK meets them (design §1, §3.3, §3.5, §3.8): every
/// answer decoded with mirrors of the SDK's own models (`SDKFlagPayload` is its
/// FlagPayloadParser, `SDKReleaseNote` its ReleaseNote decoded with `.iso8601`), and the status
/// table of §1.2 pinned: 401 only when a renewal can help, 403 for a device the server refuses.
@Suite struct FlagsPoolTests {
    /// The SDK's FlagPayloadParser (grantiva/ios-sdk FlagPayloadParser.swift): `flags` must be
    /// an object; a boolean is `.boolean`, a number equal to its integer value `.integer`
    /// (so 2.0 is an integer), another number `.double`, a string `.string`, an object or array
    /// `.json` (re-serialised).
    enum SDKFlagValue: Equatable {
        case boolean(Bool), integer(Int), double(Double), string(String), json(String)
    }

    static func sdkParse(_ body: [UInt8]) -> [String: SDKFlagValue]? {
        guard let top = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let flags = top["flags"] as? [String: Any] else { return nil }
        var out = [String: SDKFlagValue]()
        for (key, value) in flags {
            // A JSON boolean is the NSNumber of type "c" (`as? Bool` also takes 0 and 1 on Linux).
            if let n = value as? NSNumber, String(cString: n.objCType) == "c" {
                out[key] = .boolean(n.boolValue)
            } else if let n = value as? NSNumber {
                out[key] = n.doubleValue == Double(n.intValue) ? .integer(n.intValue) : .double(n.doubleValue)
            } else if let s = value as? String {
                out[key] = .string(s)
            } else if JSONSerialization.isValidJSONObject(value),
                      let data = try? JSONSerialization.data(withJSONObject: value) {
                out[key] = .json(String(decoding: data, as: UTF8.self))
            }
        }
        return out
    }

    /// The SDK's ReleaseNote (ReleaseNote.swift), decoded strictly: one bad item fails the list.
    struct SDKReleaseNote: Decodable, Equatable {
        let id: UUID
        let version: String
        let title: String
        let body: String
        let publishedAt: Date?
    }

    struct SDKWhatsNew: Decodable {
        let releaseNotes: [SDKReleaseNote]
    }

    static func sdkNotes(_ body: [UInt8]) throws -> [SDKReleaseNote] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(SDKWhatsNew.self, from: Data(body)).releaseNotes
    }

    /// A request as nginx passes it to the flags pool (query in QUERY_STRING and REQUEST_URI).
    static func request(_ path: String, method: String = "GET", query: String = "", uri: String? = nil,
                        headers: [String: String]) -> Request {
        var params = ["REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_ID": "req-f", "REMOTE_ADDR": "127.0.0.1",
                      "QUERY_STRING": query, "REQUEST_URI": uri ?? (path + (query.isEmpty ? "" : "?" + query))]
        for (k, v) in headers { params["HTTP_" + k.uppercased().replacingOccurrences(of: "-", with: "_")] = v }
        return Request(method: method, path: path, query: query, params: params, body: [])
    }

    final class Pool {
        let flow: DeviceFlow
        var token = ""

        init(tier: Tier = .pro) throws {
            flow = try DeviceFlow(tier: tier)
            token = try #require(try flow.enroll()["token"]?.stringValue)
        }

        var context: ServiceContext { flow.context }

        func headers(_ extra: [String: String] = [:], token: String? = nil) -> [String: String] {
            var h = Fixture.appHeaders
            h["Authorization"] = "Bearer " + (token ?? self.token)
            return h.merging(extra) { $1 }
        }

        func call(_ request: Request) -> Response { Endpoint.flags.handle(request, context) }

        func flags(query: String = "", headers: [String: String]? = nil) -> Response {
            call(FlagsPoolTests.request(FlagsEndpoint.path, query: query, headers: headers ?? self.headers()))
        }

        func streamAuth(query: String = "", headers: [String: String]? = nil) -> Response {
            call(FlagsPoolTests.request(FlagsStreamAuth.path,
                                        uri: "/api/v1/flags/stream" + (query.isEmpty ? "" : "?" + query),
                                        headers: headers ?? self.headers()))
        }

        func admin<T>(_ body: (FeatureFlagAdmin, Transaction) throws -> T) throws -> T {
            try FeatureFlagAdmin.write(store: context.store, appID: Fixture.appID, org: "acme", actor: .cli,
                                       now: flow.fixture.clock.now(), random: SystemRandom(), queueEvents: false, body)
        }

        func apiKey(org: String = "acme") throws -> String {
            let (key, record) = APIKeys.generate(org: org, name: "t", random: SystemRandom(),
                                                 now: flow.fixture.clock.now())
            try context.store.write([.durable]) { try $0.put(record) }
            return key
        }
    }

    static func json(_ r: Response) -> JSONValue { (try? JSONParser.parse(r.body)) ?? .null }

    // MARK: flags GET

    @Test func defaultsOfEveryTypeDecodeAsTheSDKReadsThem() throws {
        let pool = try Pool()
        _ = try pool.admin { a, txn in
            _ = try a.addFlag(key: "beta", type: .bool, value: "false", environment: nil, description: "", in: txn)
            _ = try a.addFlag(key: "limit", type: .int, value: "5", environment: nil, description: "", in: txn)
            _ = try a.addFlag(key: "ratio", type: .double, value: "0.25", environment: nil, description: "", in: txn)
            _ = try a.addFlag(key: "greeting", type: .string, value: #""hi""#, environment: nil, description: "",
                              in: txn)
            _ = try a.addFlag(key: "theme", type: .json, value: #"{"dark":true}"#, environment: nil, description: "",
                              in: txn)
        }
        let r = pool.flags()
        #expect(r.status == 200)
        #expect(r.headers.contains { $0.name == "Cache-Control" && $0.value == "no-store" })
        let parsed = try #require(Self.sdkParse(r.body), "\(String(decoding: r.body, as: UTF8.self))")
        #expect(parsed == ["beta": .boolean(false), "limit": .integer(5), "ratio": .double(0.25),
                           "greeting": .string("hi"), "theme": .json(#"{"dark":true}"#)])
        // Keys in flag-key order, compact, one line (the stream's payload is the same bytes).
        #expect(String(decoding: r.body, as: UTF8.self).hasPrefix(#"{"flags":{"beta":false,"greeting":"hi","#))
    }

    /// The worker's compiled flags (`FeatureFlagsCache`) are rebuilt when the app's generation
    /// changes: a change by any process is seen at the next request; no change, no rebuild.
    @Test func aChangeIsSeenAtTheNextRequest() throws {
        let pool = try Pool()
        _ = try pool.admin { a, txn in
            try a.addFlag(key: "beta", type: .bool, value: "false", environment: nil, description: "", in: txn)
        }
        #expect(Self.sdkParse(pool.flags().body) == ["beta": .boolean(false)])
        let cached = try #require(pool.context.caches.featureFlags[Fixture.appID]?.flags)
        #expect(Self.sdkParse(pool.flags().body) == ["beta": .boolean(false)])
        #expect(pool.context.caches.featureFlags[Fixture.appID]?.flags === cached, "unchanged: kept")
        _ = try pool.admin { a, txn in try a.setValue(key: "beta", value: "true", environment: nil, in: txn) }
        // On PostgreSQL a worker looks at the generation again once a second (`durableVersion`
        // counts seconds there, as for the apps it caches): the change is seen within it.
        if Fixture.onPostgres { Thread.sleep(forTimeInterval: 1.1) }
        #expect(Self.sdkParse(pool.flags().body) == ["beta": .boolean(true)])
        #expect(pool.context.caches.featureFlags[Fixture.appID]?.flags !== cached, "a new generation: rebuilt")
    }

    @Test func aRuleOnAServerAttributeIsNotSwayedByForgedHeaders() throws {
        let pool = try Pool()
        _ = try pool.admin { a, txn in
            _ = try a.addFlag(key: "beta", type: .bool, value: "false", environment: nil, description: "", in: txn)
            let rule = FeatureFlagRule(name: "trusted", environment: "", active: true, rollout: 100, valueJSON: "true",
                                       conditions: [FeatureFlagCondition(attribute: "riskScore", op: .gte,
                                                                         operandJSON: "101")])
            _ = try a.addRule(key: "beta", rule: rule, at: nil, in: txn)
        }
        let forged = pool.flags(headers: pool.headers(["X-Risk-Score": "200", "X-Custom-riskScore": "200"]))
        #expect(Self.sdkParse(forged.body) == ["beta": .boolean(false)], "the server's risk score, not a header")
    }

    @Test func anUnknownEnvironmentIsEmptyAndABadOneIs400() throws {
        let pool = try Pool()
        _ = try pool.admin { a, txn in
            try a.addFlag(key: "beta", type: .bool, value: "true", environment: nil, description: "", in: txn)
        }
        #expect(Self.sdkParse(pool.flags(query: "environment=qa").body) == [:])
        #expect(Self.sdkParse(pool.flags(query: "environment=production").body) == ["beta": .boolean(true)])
        #expect(Self.sdkParse(pool.flags().body) == ["beta": .boolean(true)], "production by default")
        for query in ["environment=qa&environment=production", "environment=prod%75ction", "environment=",
                      "environment=Production", "environment=a/b"] {
            let r = pool.flags(query: query)
            #expect(r.status == 400 && Self.json(r)["code"]?.stringValue == "bad_request", "\(query)")
        }
    }

    /// Design §1.2: the SDK renews its token on a 401 and retries; on the stream, a 401 for a
    /// device the server refuses would reconnect every second, forever.
    @Test func statusTable() throws {
        let pool = try Pool()
        let key = try pool.apiKey()
        var noCredential = Fixture.appHeaders
        #expect(pool.flags(headers: noCredential).status == 401, "app headers alone")
        noCredential["Authorization"] = "Bearer not-a-token"
        #expect(pool.flags(headers: noCredential).status == 401, "a token that does not verify")
        #expect(pool.flags(headers: ["Authorization": "Bearer " + key]).status == 200,
                "an API key without app headers: the organization's only app")
        #expect(pool.flags(headers: pool.headers(token: key)).status == 200, "an API key with app headers")
        #expect(pool.flags(headers: pool.headers(token: "aat_nosuchkey00000000000000000000")).status == 401)
        #expect(pool.flags().status == 200)
        #expect(pool.streamAuth().status == 204)
        _ = try pool.flow.flag(.block, reason: "fraud")
        for r in [pool.flags(), pool.streamAuth(),
                  pool.call(Self.request(WhatsNewEndpoint.path, headers: pool.headers()))] {
            #expect(r.status == 403 && Self.json(r)["code"]?.stringValue == "forbidden", "\(r.status)")
        }
        pool.flow.fixture.clock.advance(2 * 86_400)
        #expect(pool.flags().status == 401, "an expired token: a renewal helps")
    }

    @Test func tokensOfOneAppDoNotSpeakForAnother() throws {
        let pool = try Pool()
        var other = pool.headers()
        other["X-Bundle-ID"] = "com.example.other"
        try pool.context.store.write([.durable]) { txn in
            try txn.put(AppRecord(teamID: Fixture.teamID, bundleID: "com.example.other", org: "acme",
                                  policy: .production, createdAt: pool.flow.fixture.clock.now()))
        }
        #expect(pool.flags(headers: other).status == 401)
        #expect(pool.streamAuth(headers: other).status == 401)
    }

    // MARK: stream auth

    @Test func streamAuthAlwaysNamesTheChannelOnSuccess() throws {
        let pool = try Pool()
        _ = try pool.admin { a, txn in
            _ = try a.addFlag(key: "beta", type: .bool, value: "true", environment: nil, description: "", in: txn)
            _ = try a.addEnvironment("staging", in: txn)
        }
        func channel(_ r: Response) -> String? {
            r.headers.first { $0.name == FlagsStreamAuth.channelHeader }?.value
        }
        let cases = [("", Fixture.appID + "/production"), ("environment=staging", Fixture.appID + "/staging"),
                     ("environment=qa", Fixture.appID + "/~empty")]
        for (query, expected) in cases {
            let r = pool.streamAuth(query: query)
            #expect(r.status == 204 && channel(r) == expected, "\(query): \(r.status) \(channel(r) ?? "none")")
        }
        // The query comes from REQUEST_URI: the subrequest's QUERY_STRING is empty.
        let r = pool.call(Self.request(FlagsStreamAuth.path, query: "environment=staging",
                                       uri: "/api/v1/flags/stream", headers: pool.headers()))
        #expect(channel(r) == Fixture.appID + "/production")
        #expect(pool.streamAuth(query: "environment=a&environment=b").status == 400)
    }

    /// The holder channel names the stream's own credential, so that a revoke can end exactly
    /// its streams: the device's lineage for a token (a block applies to the lineage), the key's
    /// id (hex) for an API key; never anything the client chose (`X-Device-ID` does not name it).
    @Test func streamAuthNamesTheCredentialsHolderChannel() throws {
        let pool = try Pool()
        func holder(_ r: Response) -> String? { r.headers.first { $0.name == FlagsStreamAuth.holderHeader }?.value }
        let device = try #require(try pool.flow.storedDevice())
        let r = pool.streamAuth(headers: pool.headers(["X-Device-ID": "ffffffffffffffffffffffffffffffff"]))
        #expect(r.status == 204 && holder(r) == "~lineage/" + Hex.encode(LineageKey.of(device).digest))
        let key = try pool.apiKey()
        let k = pool.streamAuth(headers: pool.headers(token: key))
        #expect(k.status == 204 && holder(k) == "~key/" + Hex.encode(Array(key.prefix(12).utf8)))
        for h in [holder(r), holder(k)].compactMap({ $0 }) {
            #expect(h.wholeMatch(of: /~(lineage|key)\/[0-9a-f]{2,64}/) != nil, "site.conf's publisher grammar: \(h)")
        }
    }

    /// A device raising `X-App-Version` on every read (3.0.1, 3.0.2, …) once made each
    /// `GET /api/v1/flags` a durable write (on LMDB each also moved `Store.durableVersion`, so
    /// every worker's caches of every tenant revalidated). The flags call now raises the
    /// lineage's latest version at most once an hour.
    @Test func aDeviceCannotTurnEveryFlagReadIntoADurableWrite() throws {
        let pool = try Pool()
        _ = try pool.admin { a, txn in
            try a.addFlag(key: "beta", type: .bool, value: "false", environment: nil, description: "", in: txn)
        }
        #expect(pool.flags().status == 200)
        let before = pool.context.store.durableVersion
        for i in 1...50 {
            #expect(pool.flags(headers: pool.headers(["X-App-Version": "3.0.\(i)"])).status == 200)
        }
        // LMDB's `durableVersion` counts commits; PostgreSQL's counts seconds (and tenancy writes).
        let writes = Fixture.onPostgres ? 0 : pool.context.store.durableVersion - before
        let device = try #require(try pool.flow.storedDevice())
        let latest = { try pool.context.store.read { try $0.deviceVersions(lineage: LineageKey.of(device))?.latest } }
        let stored = try latest() ?? "-"
        #expect(writes <= 2, "50 flag reads by one device made \(writes) durable commits (latest now \(stored))")
        // Once the stored latest is an hour old (the token would expire before: age the record),
        // the next read raises it, once.
        try Self.ageVersions(pool, device)
        let again = pool.context.store.durableVersion
        #expect(pool.flags(headers: pool.headers(["X-App-Version": "3.0.51"])).status == 200)
        #expect(pool.flags(headers: pool.headers(["X-App-Version": "3.0.52"])).status == 200)
        #expect(try latest() == "3.0.51")
        if !Fixture.onPostgres { #expect(pool.context.store.durableVersion - again == 1, "one raise, one commit") }
    }

    /// Moves the device's stored latest version `FlagsEndpoint.versionRaiseInterval` into the past.
    static func ageVersions(_ pool: Pool, _ device: DeviceRecord) throws {
        try pool.context.store.write([.durable]) { txn in
            var versions = try #require(try txn.deviceVersions(lineage: LineageKey.of(device)))
            versions.latestAt = versions.latestAt - FlagsEndpoint.versionRaiseInterval
            try txn.put(versions, lineage: LineageKey.of(device))
        }
    }

    // MARK: What's New

    @Test func whatsNewListsTheNotesBetweenTheFirstAndLatestVersionOnce() throws {
        let pool = try Pool()
        let device = try #require(try pool.flow.storedDevice())
        let now = pool.flow.fixture.clock.now()
        try pool.context.store.write([.durable]) { txn in
            try txn.put(DeviceVersionsRecord(first: "1.0", firstAt: now, latest: "1.0", latestAt: now),
                        lineage: LineageKey.of(device))
        }
        let notes = try pool.admin { a, txn in
            try ["1.0", "1.1", "2.0", "2.1"].map {
                try a.addNote(version: $0, title: "v" + $0, body: "* new in " + $0, publishAt: nil, in: txn)
            }
        }
        pool.flow.fixture.clock.advance(10)
        let list = { try Self.sdkNotes(pool.call(Self.request(WhatsNewEndpoint.path, headers: pool.headers())).body) }
        #expect(try list().isEmpty, "still on the version it installed")
        _ = pool.flags(headers: pool.headers(["X-App-Version": "2.0"]))
        #expect(try list().isEmpty, "the flags call raises the latest version at most once an hour")
        try Self.ageVersions(pool, device)
        _ = pool.flags(headers: pool.headers(["X-App-Version": "2.0"]))
        let shown = try list()
        #expect(shown.map(\.version) == ["2.0", "1.1"])
        let raw = String(decoding: pool.call(Self.request(WhatsNewEndpoint.path, headers: pool.headers())).body,
                         as: UTF8.self)
        #expect(raw.contains(ReleaseNotes.idText(notes[2].id)) && !raw.contains(".000"), "\(raw)")
        let seenPath = WhatsNewEndpoint.path + "/" + ReleaseNotes.idText(notes[2].id).lowercased() + "/seen"
        let first = pool.call(Self.request(seenPath, method: "POST", headers: pool.headers()))
        #expect(first.status == 200 && Self.json(first)["status"] == "ok")
        pool.flow.fixture.clock.advance(60)
        let again = pool.call(Self.request(seenPath, method: "POST", headers: pool.headers()))
        #expect(Self.json(again)["seenAt"] == Self.json(first)["seenAt"], "a repeat keeps the first seenAt")
        #expect(try list().map(\.version) == ["1.1"])
        let unknown = WhatsNewEndpoint.path + "/00000000-0000-4000-8000-000000000000/seen"
        #expect(pool.call(Self.request(unknown, method: "POST", headers: pool.headers())).status == 404)
        #expect(pool.call(Self.request(WhatsNewEndpoint.path + "/nope/seen", method: "POST", headers: pool.headers()))
            .status == 404)
        let key = try pool.apiKey()
        let byKey = pool.call(Self.request(WhatsNewEndpoint.path, headers: pool.headers(token: key)))
        let keyNotes = try Self.sdkNotes(byKey.body)
        #expect(byKey.status == 200 && keyNotes.isEmpty, "an API key has no device")
    }
}
