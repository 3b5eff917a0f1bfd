@testable import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
@testable import AttestStore
import FastCGI
import Foundation

/// A data directory in /tmp with one organization and app, and a context over it with a
/// fixed clock. Removed when released.
final class Fixture {
    let path: String
    let data: DataDirectory
    let clock: FixedClock
    let context: ServiceContext
    /// The context's log lines, in order.
    var logs: [String] {
        get { logBook.lines }
        set { logBook.lines = newValue }
    }
    private let logBook: LogBook
    /// The fixture organization's subject secret (signed subject values).
    let subjectSecret: String
    static let teamID = "ABCDE12345"
    static let bundleID = "com.example.app"
    static var appID: String { teamID + "." + bundleID }

    init(tier: Tier = .pro, policy: EnvironmentPolicy = .production, trustAnchors: [Certificate]? = nil,
         testRoots: [Certificate] = [], receiptAnchor: Certificate? = nil, testReceiptRoots: [Certificate] = [],
         configure: (inout Configuration) -> Void = { _ in }, rate: UInt32 = 0,
         subjectLinks: SubjectLinkPolicy = .asserted) throws {
        var template = Array("/tmp/attest-service-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        data = DataDirectory(path)
        clock = FixedClock(Timestamp(iso8601: "2026-06-01T12:00:00Z")!)
        var config = Configuration()
        config.durableMapSizeMiB = 16
        config.ephemeralMapSizeMiB = 16
        configure(&config)
        schema = try Self.postgresSchema(&config)
        try data.initialise(configuration: config, now: clock.now())
        let store = try Store(directory: data.storeDirectory, options: config.storeOptions)
        let created = clock.now()
        let secret = SignedSubject.newSecret(random: SystemRandom())
        subjectSecret = secret
        let book = LogBook()
        logBook = book
        try store.write { txn in
            // `asserted` unless chosen: the behaviour the endpoint and subject tests were written for.
            try txn.put(OrgRecord(name: "acme", tier: tier, ratePerMinute: rate, createdAt: created,
                                  subjectLinks: subjectLinks, subjectSecret: secret))
            try txn.put(AppRecord(teamID: Fixture.teamID, bundleID: Fixture.bundleID, org: "acme", policy: policy,
                                  createdAt: created))
        }
        context = try ServiceContext(configuration: config, store: store, clock: clock, random: SystemRandom(),
                                     challengeSecret: data.challengeSecret(),
                                     trustAnchors: trustAnchors ?? [AppleAppAttestationRoot.certificate()],
                                     testRoots: testRoots, receiptAnchor: receiptAnchor,
                                     testReceiptRoots: testReceiptRoots, keyRing: KeyRing(data),
                                     log: { book.lines.append($0.text) })
    }

    /// With `ATTEST_TEST_STORE=postgres` (and `ATTEST_TEST_POSTGRES_URL`), every fixture gets
    /// a fresh schema in that database and the whole service suite runs on the PostgreSQL
    /// backend (`nginx/scripts/test.sh` runs it both ways).
    private let schema: String?

    /// Whether this run puts the fixtures in PostgreSQL; tests of LMDB's own failure modes
    /// (a full map) and of `attestctl backup` (an LMDB copy) are enabled only without it.
    static var onPostgres: Bool { ProcessInfo.processInfo.environment["ATTEST_TEST_STORE"] == "postgres" }

    static func postgresSchema(_ config: inout Configuration) throws -> String? {
        let env = ProcessInfo.processInfo.environment
        guard env["ATTEST_TEST_STORE"] == "postgres" else { return nil }
        guard let url = env["ATTEST_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw StoreError(.open, "ATTEST_TEST_STORE=postgres needs ATTEST_TEST_POSTGRES_URL")
        }
        let name = "s_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let admin = PGConnection(url: url)
        try admin.ensure()
        try admin.command("CREATE SCHEMA \(name)")
        config.storeBackend = .postgres
        config.postgresURL = url + " options='-c search_path=\(name) -c synchronous_commit=off'"
        return name
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
        if let schema, let url = ProcessInfo.processInfo.environment["ATTEST_TEST_POSTGRES_URL"] {
            let admin = PGConnection(url: url)
            try? admin.ensure()
            try? admin.command("DROP SCHEMA \(schema) CASCADE")
        }
    }

    /// A request as nginx would pass it.
    static func request(_ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:],
                        requestID: String = "req-1", remote: String = "127.0.0.1") -> Request {
        var params = ["REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_ID": requestID, "REMOTE_ADDR": remote]
        for (k, v) in headers { params["HTTP_" + k.uppercased().replacingOccurrences(of: "-", with: "_")] = v }
        return Request(method: method, path: path, params: params, body: Array((body ?? "").utf8))
    }

    static let appHeaders = ["X-Bundle-ID": bundleID, "X-Team-ID": teamID]

    func call(_ endpoint: Endpoint, _ method: String = "POST", body: String? = nil,
              headers: [String: String] = Fixture.appHeaders, remote: String = "127.0.0.1") -> (Int, JSONValue) {
        let response = endpoint.handle(Fixture.request(method, endpoint.path, body: body, headers: headers,
                                                       remote: remote), context)
        return (response.status, (try? JSONParser.parse(response.body)) ?? .null)
    }

    func challenge(headers: [String: String] = Fixture.appHeaders) throws -> String {
        let (status, body) = call(.challenge, "GET", headers: headers)
        guard status == 200, let c = body["challenge"]?.stringValue else {
            throw FixtureError("challenge failed: \(status) \(body.jsonText)")
        }
        return c
    }
}

/// Where a fixture's context logs (built before the context, which takes its log at init).
final class LogBook {
    var lines: [String] = []
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

extension JSONValue {
    /// JSON text of an object built from pairs, for request bodies.
    static func body(_ pairs: [(String, String)]) -> String {
        JSONValue.object(pairs.map { ($0.0, .string($0.1)) }).jsonText
    }
}
