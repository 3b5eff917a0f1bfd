import AttestConfig
import AttestCore
import AttestStore
import Testing

@Suite struct ConfigurationTests {
    func problem(_ text: String) -> String? {
        do { _ = try Configuration(jsonText: text); return nil } catch { return error.message }
    }

    @Test func theLongestTokenLifetimeIsTheDeploymentsOrAnAppsOwn() {
        var config = Configuration()
        config.tokenLifetimeSeconds = 3_600
        let now = Timestamp(seconds: 1_780_000_000)
        let plain = AppRecord(teamID: "T", bundleID: "a", org: "o", createdAt: now)
        let long = AppRecord(teamID: "T", bundleID: "b", org: "o", tokenLifetimeSeconds: 172_800, createdAt: now)
        #expect(config.longestTokenLifetime(apps: []) == 3_600)
        #expect(config.longestTokenLifetime(apps: [plain]) == 3_600, "0: the app uses the deployment's")
        #expect(config.longestTokenLifetime(apps: [plain, long]) == 172_800)
    }

    @Test func anEmptyObjectIsAllDefaults() throws {
        #expect(try Configuration(jsonText: "{}") == Configuration())
    }

    @Test func theFullDocumentRoundTrips() throws {
        var c = Configuration()
        c.sync = .interval
        c.tokenLifetimeSeconds = 600
        c.testRoots = ["test-ca/root.pem"]
        #expect(try Configuration(jsonText: c.json.prettyJSONText) == c)
    }

    @Test func everyKeyIsDocumentedAndPresent() {
        let json = Configuration().json
        for key in ConfigurationKey.all {
            #expect(!key.doc.isEmpty, "\(key.name) has a doc line")
            var node: JSONValue? = json
            for part in key.name.split(separator: ".") { node = node?[String(part)] }
            #expect(node != nil, "\(key.name) appears in the document")
        }
    }

    /// Each key is stored in one property, named for the key: it ends with the key's last
    /// component (`tokens.issuer` → `tokenIssuer`, `store.sync` → `sync`).
    @Test func everyKeysPropertyIsNamedForIt() {
        let defaults = Configuration()
        let described = { (c: Configuration) in Mirror(reflecting: c).children.map { ($0.label!, "\($0.value)") } }
        let before = Dictionary(uniqueKeysWithValues: described(defaults))
        for key in ConfigurationKey.all {
            var changed = defaults
            key.set(&changed, Self.anotherValue(for: key, than: key.get(defaults)))
            let properties = described(changed).filter { before[$0.0] != $0.1 }.map(\.0)
            let last = key.name.split(separator: ".").last!.lowercased()
            #expect(properties.count == 1 && properties[0].lowercased().hasSuffix(last),
                    "\(key.name) is stored in \(properties): one property whose name ends with \(last)")
        }
    }

    /// A value of the key's kind other than `value` (not checked against cross-key rules).
    static func anotherValue(for key: ConfigurationKey, than value: JSONValue) -> JSONValue {
        switch key.kind {
        case .integer(let range):
            .int(Int64(value.intValue == Int64(range.lowerBound) ? range.upperBound : range.lowerBound))
        case .integerChoice(let options): .int(Int64(options.first { Int64($0) != value.intValue }!))
        case .string, .optionalString: .string((value.stringValue ?? "") + "x")
        case .optionalHTTPSURL: .string(value.stringValue == "https://x" ? "https://y" : "https://x")
        case .choice(let options): .string(options.first { $0 != value.stringValue }!)
        case .bool: .bool(value.boolValue != true)
        case .stringList: .array([.string("x")])
        case .integerList(let range): .array([.int(Int64(range.lowerBound))])
        }
    }

    @Test func unknownKeysAreNamed() {
        #expect(problem(#"{"tokens": {"lifetime": 5}}"#)?.contains("tokens.lifetime") == true)
    }

    @Test func badValuesNameTheKeyAndTheRule() {
        #expect(problem(#"{"tokens": {"lifetimeSeconds": 5}}"#)?
                    .contains("tokens.lifetimeSeconds must be a whole number in 600...") == true)
        #expect(problem(#"{"store": {"sync": "sometimes"}}"#)?.contains("store.sync must be one of") == true)
        #expect(problem(#"{"server": {"listen": "nowhere"}}"#)?.contains("server.listen") == true)
        #expect(problem(#"{"rateLimits": {"challengeBurst": 0}}"#)?.contains("rateLimits.challengeBurst") == true,
                "nginx refuses burst=0: a config that stops nginx from starting is refused where it is set and loaded")
        #expect(problem("[1]")?.contains("JSON object") == true)
        #expect(problem("{")?.contains("not valid JSON") == true)
    }

    /// Review of issue 39: server.metricsListen and server.listen compared as text let one
    /// socket (or a wildcard over the other's host) through.
    @Test("server.metricsListen is refused on server.listen's socket, however spelled", arguments: [
        ("127.0.0.1:8080 reuseport", "127.0.0.1:8080"), ("127.0.0.1:08080", "127.0.0.1:8080"),
        ("*:8080", "127.0.0.1:8080"), ("127.0.0.1:8080", "*:8080"), ("0.0.0.0:8080", "127.0.0.1:8080"),
        ("[::]:8080", "[::1]:8080"), ("127.0.0.1:8080", "127.0.0.1:8080"),
    ])
    func metricsListenOverlapsListen(metrics: String, listen: String) {
        let json = #"{"server": {"listen": "\#(listen)", "metricsListen": "\#(metrics)"}}"#
        #expect(problem(json)?.contains("server.metricsListen must be another socket than server.listen") == true,
                "\(json)")
        var c = Configuration()
        #expect(throws: Configuration.Problem.self) {
            try c.set("server.listen", jsonValue: "\"\(listen)\"")
            try c.set("server.metricsListen", jsonValue: "\"\(metrics)\"")
        }
    }

    @Test("other sockets are accepted; set without validating lets two keys change together")
    func metricsListenElsewhere() throws {
        #expect(problem(#"{"server": {"listen": "127.0.0.1:8080", "metricsListen": "127.0.0.2:8080"}}"#) == nil)
        #expect(problem(#"{"server": {"listen": "*:8080", "metricsListen": "127.0.0.1:9469"}}"#) == nil)
        var c = Configuration()
        // serve --listen 127.0.0.1:9469 --metrics-listen 127.0.0.1:9470: the first alone meets the default.
        #expect(throws: Configuration.Problem.self) { try c.set("server.listen", jsonValue: #""127.0.0.1:9469""#) }
        try c.set("server.listen", jsonValue: "127.0.0.1:9469", validating: false)
        try c.set("server.metricsListen", jsonValue: #""127.0.0.1:9470""#, validating: false)
        try c.validate()
        #expect(c.listen == "127.0.0.1:9469" && c.metricsListen == "127.0.0.1:9470")
    }

    @Test func setTakesJSONOrABareWord() throws {
        var c = Configuration()
        try c.set("store.sync", jsonValue: "interval")
        try c.set("server.workers", jsonValue: "4")
        try c.set("trust.testRoots", jsonValue: #"["a.pem"]"#)
        #expect(c.sync == .interval && c.workers == 4 && c.testRoots == ["a.pem"])
        #expect(throws: Configuration.Problem.self) { try c.set("server.workers", jsonValue: "0") }
        #expect(throws: Configuration.Problem.self) { try c.set("no.such", jsonValue: "1") }
    }
}
