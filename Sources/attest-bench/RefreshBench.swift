import AttestConfig
import AttestCore
import AttestMetrics
import AttestOperations
import AttestService
import AttestStore
import AttestTesting
import CLISupport
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// `attest-bench refresh`: what one refresh costs inside the process, with no nginx and
/// no FastCGI, split into its two signatures and the rest.
///
/// In a scratch data directory (removed afterwards) it enrolls `--devices` software devices
/// through the validate endpoint, prepares `--count` refresh requests (each with its own
/// challenge, round-robin over the devices), sends one refresh per device to warm the
/// per-process key cache, then times the remaining requests through `Endpoint.refresh` on
/// one thread (thread CPU time). `--cold`: no warm-up and one refresh per device, so every
/// refresh loads a key this process has not seen (a large fleet whose devices refresh
/// rarely). Every answer must be 200. Next to it, on the same thread:
/// OpenSSL's raw P-256 verify (a prepared key and digest) and the ES256 signature of a token
/// with the same claims (`JWTSigner`, the store's signing key). Prints
/// `refresh_us=… verify_us=… sign_us=… rest_us=…` (rest = refresh − verify − sign: the store's
/// transactions, JSON, admission, claims, token building) and a table. `--metrics`: the
/// refreshes count into a metrics segment, as a pool's do (`ServiceMetrics`; run it back to back
/// with a run without to see the cost), and `record_ns=` is what one refresh's recording costs
/// alone (its request counter, duration histogram and outcome: six relaxed atomic adds).
enum RefreshBench {
    static let teamID = "BENCH00001", bundleID = "com.example.bench"

    static func run(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["devices", "count", "sync", "dir"], switches: ["cold", "metrics"])
        let devices = try args.int("devices", default: 200, in: 1...100_000)
        let cold = args.flag("cold")
        let count = cold ? devices : try args.int("count", default: 5000, in: 1...10_000_000)
        let warm = cold ? 0 : devices
        let sync = args.value("sync") ?? "interval"
        guard sync == "interval" || sync == "commit" else { throw UsageError("--sync is commit or interval") }
        let parent = args.value("dir") ?? "/tmp"
        var template = Array((parent + "/attestctl-bench-refresh.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw UsageError("--dir \(parent): cannot create a scratch directory in it: "
                                 + "\(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        defer { _ = system("rm -rf '\(path)'") }

        let start = SystemClock().now()
        let pki = try TestPKI.generate(validFrom: start - 86_400, validUntil: start + 365 * 86_400)
        let data = DataDirectory(path)
        var config = Configuration()
        config.sync = Configuration.Sync(rawValue: sync)!  // checked above
        config.validatePerIPPerMinute = 0
        config.refreshPerIPPerMinute = 0
        _ = try data.initialise(configuration: config, now: start)
        let context = try ServiceContext.open(dataDirectory: data, trust: TrustAnchors(hardware: [pki.rootCertificate]),
                                              log: { _ in })
        try context.store.write([.durable]) { txn in
            try txn.put(OrgRecord(name: "bench", tier: .enterprise, createdAt: start))
            try txn.put(AppRecord(teamID: teamID, bundleID: bundleID, org: "bench", createdAt: start))
        }

        Output.err("enrolling \(devices) software devices (validate, in-process)")
        var enrolled = [SoftwareDevice]()
        for _ in 0..<devices {
            let device = try SoftwareDevice.generate()
            let challenge = try fetchChallenge(context)
            let cdh = SHA256.hash(challenge.utf8)
            let built = try device.synthetic(clientDataHash: cdh, appID: teamID + "." + bundleID)
                .build(pki: pki, at: start)
            let body = JSONValue.object([
                ("challenge", .string(challenge)), ("keyId", .string(Base64.encode(built.keyID))),
                ("attestationObject", .string(Base64.encode(built.attestationObject))),
                ("clientDataHash", .string(Base64.encode(cdh))),
                ("bundleId", .string(bundleID)), ("teamId", .string(teamID)), ("deviceModel", "iPhone15,2"),
                ("osVersion", "18.0"), ("appVersion", "1.0"), ("appBuildNumber", "1"), ("platform", "iOS"),
            ])
            try expect200(Endpoint.validate, body, context)
            enrolled.append(device)
        }
        Output.err("preparing \(count + warm) refresh requests")
        var requests = [Request]()
        requests.reserveCapacity(count + warm)
        for i in 0..<(count + warm) {
            let challenge = try fetchChallenge(context)
            let cdh = SHA256.hash(challenge.utf8)
            let assertion = try enrolled[i % devices].assert(clientDataHash: cdh, appID: teamID + "." + bundleID)
            let body = JSONValue.object([
                ("keyId", .string(Base64.encode(enrolled[i % devices].keyID))),
                ("assertion", .string(Base64.encode(assertion))),
                ("clientDataHash", .string(Base64.encode(cdh))), ("challenge", .string(challenge)),
            ])
            requests.append(request(.refresh, "POST", body: body.jsonBytes, id: i))
        }
        let segment = args.flag("metrics")
            ? ServiceMetrics.start(run: data.runDirectory, name: "refresh", log: { Output.err($0) }) : nil
        // One refresh per device first: the key cache warm, as in a long-running worker.
        for r in requests[..<warm] { try check(Endpoint.refresh.handle(r, context)) }
        var lastBody = [UInt8]()
        let began = Throughput.threadCPUSeconds()
        for r in requests[warm...] {
            let response = Endpoint.refresh.handle(r, context)
            if response.status != 200 { try check(response) }
            lastBody = response.body
        }
        let refreshSeconds = (Throughput.threadCPUSeconds() - began) / Double(count)

        // The token's own claims, signed again and again.
        guard let token = (try JSONParser.parse(lastBody))["token"]?.stringValue else {
            throw BenchError("the last refresh answered no token")
        }
        let claims = try JWT(compact: token).claims
        let signer = try KeyRing(data).signer(at: SystemClock().now())
        let verifier = try RawECDSAVerifier(curve: .p256)
        let rounds = max(200, count / 2)
        let us = (refresh: refreshSeconds * 1e6,
                  sign: microseconds(rounds) { _ = try? signer.sign(claims) },
                  verify: microseconds(rounds) { _ = verifier.verifyOnce() })
        let rest = us.refresh - us.sign - us.verify
        var recordNS = ""
        if let segment {
            let counted = segment.load(MetricsLayout.refreshOutcomeSlots)
            guard counted == UInt64(count + warm) else {
                throw BenchError("the segment counted \(counted) ok refreshes, not \(count + warm)")
            }
            let rounds = 1_000_000
            recordNS = " record_ns=" + String(format2: microseconds(rounds) {
                segment.recordRequest(endpoint: 2, status: 200, microseconds: 150)
                segment.recordRefreshOutcome("ok")
            } * 1000)
        }
        Output.out("refresh_us=\(String(format2: us.refresh)) verify_us=\(String(format2: us.verify)) "
                   + "sign_us=\(String(format2: us.sign)) rest_us=\(String(format2: rest))" + recordNS)
        Output.err("""

            in-process refresh, one thread (thread CPU time): \(count) refreshes over \(devices) devices, \
            store.sync \(sync), keys \(cold ? "cold" : "warm")
            """)
        Output.err(Output.table(["part", "µs per refresh", "share"], [
            ["whole refresh (Endpoint.refresh)", String(format2: us.refresh), "1.00"],
            ["raw OpenSSL P-256 verify", String(format2: us.verify), String(format2: us.verify / us.refresh)],
            ["ES256 token signature (JWTSigner)", String(format2: us.sign), String(format2: us.sign / us.refresh)],
            ["the rest: store, JSON, admission, claims", String(format2: rest), String(format2: rest / us.refresh)],
        ]))
        return 0
    }

    /// Thread CPU µs per call of `body`, over `rounds` calls.
    static func microseconds(_ rounds: Int, _ body: () -> Void) -> Double {
        let began = Throughput.threadCPUSeconds()
        for _ in 0..<rounds { body() }
        return (Throughput.threadCPUSeconds() - began) / Double(rounds) * 1e6
    }

    static func request(_ endpoint: Endpoint, _ method: String, body: [UInt8] = [], id: Int) -> Request {
        Request(method: method, path: endpoint.path, params: [
            "REQUEST_METHOD": method, "DOCUMENT_URI": endpoint.path, "REQUEST_ID": "bench-\(id)",
            "REMOTE_ADDR": "127.0.0.1", "HTTP_X_BUNDLE_ID": bundleID, "HTTP_X_TEAM_ID": teamID,
            "CONTENT_TYPE": "application/json",
        ], body: body)
    }

    static func fetchChallenge(_ context: ServiceContext) throws -> String {
        let response = Endpoint.challenge.handle(request(.challenge, "GET", id: 0), context)
        try check(response)
        guard let challenge = (try JSONParser.parse(response.body))["challenge"]?.stringValue else {
            throw BenchError("the challenge endpoint answered no challenge")
        }
        return challenge
    }

    static func expect200(_ endpoint: Endpoint, _ body: JSONValue, _ context: ServiceContext) throws {
        try check(endpoint.handle(request(endpoint, "POST", body: body.jsonBytes, id: 0), context))
    }

    static func check(_ response: Response) throws {
        guard response.status == 200 else {
            throw BenchError("an in-process request answered \(response.status): "
                                 + "\(String(decoding: response.body, as: UTF8.self))")
        }
    }
}
