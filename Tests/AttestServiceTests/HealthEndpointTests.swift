@testable import AttestConfig
import AttestCore
import AttestMetrics
@testable import AttestService
@testable import AttestStore
import FastCGI
import Foundation
import Testing

/// `GET /healthz` (issue #39, item 2): each check failing on its own, the answer's shape and
/// methods, that no answer names a tenant, and the per-worker verdict cache.
@Suite struct HealthEndpointTests {
    /// The whole vocabulary a failing answer may use (`HealthCheck`).
    static let vocabulary: Set<String> = ["store", "store_map", "signing_key", "pool_challenge", "pool_validate",
                                          "pool_refresh", "pool_mad", "pool_webhooks", "pool_flags",
                                          "pool_feedback", "pool_org"]

    /// A fixture whose monitor context probes `sockets` (every pool up unless told otherwise).
    static func fixture(_ sockets: PoolSockets, configure: (inout Configuration) -> Void = { _ in }) throws -> Fixture {
        let f = try Fixture(configure: configure)
        f.context.poolSockets = sockets.path
        return f
    }

    static func health(_ f: Fixture, _ method: String = "GET") -> Response {
        Endpoint.monitor.handle(Fixture.request(method, "/healthz", headers: [:]), f.context)
    }

    /// The status and the failing names of a GET, checking the body's shape on the way.
    static func failing(_ f: Fixture) throws -> (Int, [String]) {
        let r = health(f)
        let body = try JSONParser.parse(r.body)
        if r.status == 200 {
            #expect(String(decoding: r.body, as: UTF8.self) == #"{"status":"ok"}"#)
            return (200, [])
        }
        #expect(body["status"]?.stringValue == "fail")
        #expect(body.objectValue?.count == 2, "status and failing only: \(body.jsonText)")
        let names = try #require(body["failing"]?.arrayValue).compactMap(\.stringValue)
        #expect(Set(names).isSubset(of: vocabulary), "\(names)")
        return (r.status, names)
    }

    @Test func everyCheckPassing200ItsHeadHasNoBodyAndOtherMethodsAre405() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        let (status, names) = try Self.failing(f)
        #expect(status == 200 && names.isEmpty)
        let r = Self.health(f)
        #expect(r.headers.contains { $0.name == "Cache-Control" && $0.value == "no-store" })
        let head = Self.health(f, "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
            let other = Self.health(f, method)
            #expect(other.status == 405, "\(method): \(other.status)")
        }
    }

    @Test func aStoreThatThrowsFailsTheStoreCheckAloneAndItsTextGoesToTheLogOnly() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        f.context.faults.healthStoreRead = { throw StoreError(.io, "pread of org acme's page 42 failed: EIO") }
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["store"])
        let body = String(decoding: Self.health(f).body, as: UTF8.self)
        #expect(!body.contains("acme") && !body.contains("EIO") && !body.contains("42"), "\(body)")
        #expect(f.logs.contains { $0.contains("healthz: failing store") && $0.contains("EIO") }, "\(f.logs)")
        let head = Self.health(f, "HEAD")
        #expect(head.status == 503 && head.body.isEmpty)
    }

    @Test(.enabled(if: Fixture.onPostgres, "a PostgreSQL store"))
    func aPostgreSQLStoreWhoseTableIsGoneFailsTheStoreCheckUntilItIsBack() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        #expect(try Self.failing(f).0 == 200)
        // The table of the record the check reads, renamed from another connection: the read then fails.
        let url = f.context.configuration.postgresURL
        let schema = try #require(url.firstRange(of: "search_path=").map { url[$0.upperBound...] }
            .map { String($0.prefix { $0.isLetter || $0.isNumber || $0 == "_" }) })
        let admin = PGConnection(url: ProcessInfo.processInfo.environment["ATTEST_TEST_POSTGRES_URL"]!)
        try admin.ensure()
        try admin.command("ALTER TABLE \(schema).ae_meta RENAME TO ae_meta_gone")
        f.clock.advance(HealthEndpoint.cacheSeconds)
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["store"])
        #expect(f.logs.contains { $0.contains("healthz: failing store: store:") }, "\(f.logs)")
        try admin.command("ALTER TABLE \(schema).ae_meta_gone RENAME TO ae_meta")
        f.clock.advance(HealthEndpoint.cacheSeconds)
        #expect(try Self.failing(f).0 == 200, "back once the store answers: \(f.logs)")
    }

    @Test(.enabled(if: !Fixture.onPostgres, "LMDB's map"))
    func anEphemeralMapFilledByRealWritesPastTheThresholdFailsTheMapCheckAlone() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets) { $0.ephemeralMapSizeMiB = 1 }
        #expect(f.context.configuration.maxMapPercent == 90, "the default")
        #expect(try Self.failing(f).0 == 200, "a fresh map is far below 90%")
        func ephemeral() -> (used: Int, mapSize: Int) {
            let u = f.context.store.usage().first(where: { $0.environment == .ephemeral })!
            return (u.used, u.mapSize)
        }
        // Used challenges, as validate and refresh write them, until the map passes 90% or refuses.
        var refused = false
        while ephemeral().used * 100 < ephemeral().mapSize * 90 && !refused {
            do {
                try f.context.store.write([.ephemeral]) { txn in
                    for _ in 0..<200 {
                        let key = (0..<16).map { _ in UInt8.random(in: 0...255) }
                        _ = try txn.put(.challenges, key, Array(repeating: 1, count: 8), noOverwrite: true)
                    }
                }
            } catch let error as StoreError where error.code == .full {
                refused = true
            }
        }
        f.clock.advance(HealthEndpoint.cacheSeconds)
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["store_map"], "\(ephemeral()) refused: \(refused)")
        #expect(f.logs.contains { $0.contains("the ephemeral map uses") }, "\(f.logs)")
        let body = String(decoding: Self.health(f).body, as: UTF8.self)
        #expect(!body.contains(String(ephemeral().used)) && !body.contains("ephemeral"), "no sizes: \(body)")
    }

    @Test func theThresholdIsTheConfiguredPercentage() throws {
        let sockets = try PoolSockets()
        // 1% of a 1 MiB map is 10 KiB: a fresh environment's few pages already reach it (LMDB);
        // PostgreSQL has no map, so its check passes at any threshold.
        let f = try Self.fixture(sockets) { $0.ephemeralMapSizeMiB = 1; $0.maxMapPercent = 1 }
        try f.context.store.write([.ephemeral]) { txn in
            for i in 0..<100 { _ = try txn.put(.challenges, Array("used-\(i)".utf8), [1], noOverwrite: true) }
        }
        let (status, names) = try Self.failing(f)
        if Fixture.onPostgres {
            #expect(status == 200 && names.isEmpty)
        } else {
            #expect(status == 503 && names == ["store_map"])
        }
        let roomy = try Self.fixture(sockets) { $0.ephemeralMapSizeMiB = 1; $0.maxMapPercent = 100 }
        #expect(try Self.failing(roomy).0 == 200)
    }

    @Test func aMissingSigningKeyFailsTheKeyCheckAlone() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        try FileManager.default.removeItem(atPath: f.context.keyRing.indexPath)
        try f.context.keyRing.reload()
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["signing_key"])
        #expect(f.logs.contains { $0.contains("no signing key is active") }, "\(f.logs)")
    }

    @Test func anExpiredSigningKeyFailsTheKeyCheckAlone() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        #expect(try Self.failing(f).0 == 200)
        var entries = f.context.keyRing.entries
        #expect(entries.count == 1)
        entries[0].retireAt = f.clock.now() + 60
        try KeyIndex.json(entries).jsonText.write(toFile: f.context.keyRing.indexPath, atomically: true,
                                                  encoding: .utf8)
        try f.context.keyRing.reload()
        f.clock.advance(59)
        #expect(try Self.failing(f).0 == 200, "still active a second before it retires")
        f.clock.advance(1)
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["signing_key"])
    }

    @Test func aDeadOrMissingPoolSocketFailsThatPoolsCheckAlone() throws {
        let sockets = try PoolSockets(refused: [.refresh], missing: [.webhooks])
        let f = try Self.fixture(sockets)
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["pool_refresh", "pool_webhooks"])
        #expect(PoolProbe.accepts(sockets.path + "/challenge.sock"))
        #expect(!PoolProbe.accepts(sockets.path + "/refresh.sock"), "the file is there, nothing listens")
        #expect(FileManager.default.fileExists(atPath: sockets.path + "/refresh.sock"))
        #expect(!PoolProbe.accepts(sockets.path + "/" + String(repeating: "x", count: 200)), "too long a path")
    }

    /// A master that holds its socket but runs no worker (its segment says 0) is down too; a
    /// segment that is missing or not one of ours says nothing, the socket decides.
    @Test func aPoolWhoseSegmentSaysNoWorkerFailsThatPoolsCheck() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        let metrics = f.path + "/metrics"
        try FileManager.default.createDirectory(atPath: metrics, withIntermediateDirectories: false)
        f.context.metricsDirectory = metrics
        let refresh = try MetricsSegment.open(path: MetricsSegment.path(directory: metrics, name: "refresh"))
        refresh.set(MetricsLayout.poolWorkers, 0)
        let mad = try MetricsSegment.open(path: MetricsSegment.path(directory: metrics, name: "mad"))
        mad.set(MetricsLayout.poolWorkers, 4)
        try Data("not a segment".utf8).write(to: URL(fileURLWithPath: metrics + "/challenge.metrics"))
        let (status, names) = try Self.failing(f)
        #expect(status == 503 && names == ["pool_refresh"])
        #expect(f.logs.contains { $0.contains("the refresh pool runs no worker") }, "\(f.logs)")
        refresh.set(MetricsLayout.poolWorkers, 2)
        f.clock.advance(HealthEndpoint.cacheSeconds)
        #expect(try Self.failing(f).0 == 200)
    }

    @Test func everyCheckFailingAtOnceStillNamesNoTenantNoSizeAndNoErrorText() throws {
        let sockets = try PoolSockets(refused: Set(HealthCheck.pools))
        let f = try Self.fixture(sockets) { $0.ephemeralMapSizeMiB = 1; $0.maxMapPercent = 1 }
        f.context.faults.healthStoreRead = { throw StoreError(.io, "acme com.example.app ABCDE12345 failed") }
        try FileManager.default.removeItem(atPath: f.context.keyRing.indexPath)
        try f.context.keyRing.reload()
        let r = Self.health(f)
        let body = String(decoding: r.body, as: UTF8.self)
        #expect(r.status == 503)
        let expected = Fixture.onPostgres ? Self.vocabulary.subtracting(["store_map"]) : Self.vocabulary
        #expect(Set(try Self.failing(f).1) == expected)
        for secret in ["acme", Fixture.bundleID, Fixture.teamID, "failed", f.path, "sock", "MiB", "bytes"] {
            #expect(!body.contains(secret), "\(secret) in \(body)")
        }
        #expect(body.allSatisfy { $0.isLetter || "_{}[]\":,".contains($0) }, "names and JSON only: \(body)")
    }

    @Test func aBurstOfPollsInOneSecondRunsTheChecksOnceAndANewSecondRunsThemAgain() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        var runs = 0
        f.context.faults.healthStoreRead = { runs += 1 }
        for _ in 0..<100 { #expect(Self.health(f).status == 200) }
        #expect(runs == 1)
        // A failure within the second shows at the next second's first poll, not before.
        f.context.faults.healthStoreRead = { runs += 1; throw StoreError(.io, "down") }
        #expect(Self.health(f).status == 200 && runs == 1, "the second's verdict still holds")
        f.clock.advance(HealthEndpoint.cacheSeconds)
        for _ in 0..<100 { #expect(Self.health(f).status == 503) }
        #expect(runs == 2)
        f.clock.advance(1)
        _ = Self.health(f)
        #expect(runs == 3)
        #expect(f.logs.filter { $0.contains("healthz: failing") }.count == 1, "logged when it changed: \(f.logs)")
        f.context.faults.healthStoreRead = nil
        f.clock.advance(1)
        #expect(Self.health(f).status == 200)
        #expect(f.logs.contains { $0.contains("healthz: every check passes again") })
    }

    /// What a poll that runs the checks costs, against one answered from the verdict (printed
    /// as a FIGURE, not asserted: the cache is what keeps the first off the polling path).
    @Test func oneRunOfTheChecksAgainstACachedAnswer() throws {
        let sockets = try PoolSockets()
        let f = try Self.fixture(sockets)
        var runs = 0
        f.context.faults.healthStoreRead = { runs += 1 }
        func microseconds(_ n: Int, advancing: Bool) -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<n {
                if advancing { f.clock.advance(1) }
                #expect(Self.health(f).status == 200)
            }
            return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n) / 1000
        }
        let fresh = microseconds(200, advancing: true)
        #expect(runs == 200)
        let cached = microseconds(2000, advancing: false)
        #expect(runs == 200, "no run within the second")
        print("FIGURE: /healthz in process: \(Int(fresh)) µs a poll that runs the checks (read, map stat, "
              + "ES256 signature, 5 connects), \(String(format: "%.1f", cached)) µs one answered from the verdict")
    }
}

/// A directory with a listening unix socket for each pool `/healthz` probes, except those
/// `refused` (bound, then closed: the file stays, as after its pool died) and those `missing`.
final class PoolSockets {
    let path: String
    private var listeners: [Int32] = []

    init(refused: Set<Endpoint> = [], missing: Set<Endpoint> = []) throws {
        var template = Array("/tmp/attest-health-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        for endpoint in HealthCheck.pools where !missing.contains(endpoint) {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array((path + "/\(endpoint.rawValue).sock").utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard fd >= 0, bound == 0, listen(fd, 1024) == 0 else { throw FixtureError("cannot listen in \(path)") }
            if refused.contains(endpoint) { close(fd) } else { listeners.append(fd) }
        }
    }

    deinit {
        for fd in listeners { close(fd) }
        try? FileManager.default.removeItem(atPath: path)
    }
}
