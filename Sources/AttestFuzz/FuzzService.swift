import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import AttestTesting
import FastCGI
import Glibc

/// A data directory in /tmp with one organization, one app and one enrolled device, and a
/// service context over it, for the targets that drive the endpoints (`request`, `fastcgi`).
///
/// Rate limits are off (a fuzzer sends millions of requests from one address); the clock
/// advances one second per input (in a one-hour cycle) so used challenges expire and are
/// swept. The directory is removed on deinit; a fuzzer exits without it and leaves it in /tmp.
final class FuzzService {
    static let teamID = "FUZZTEAM01"
    static let bundleID = "com.example.fuzz"
    static var appID: String { teamID + "." + bundleID }
    static let appHeaders = ["HTTP_X_BUNDLE_ID": bundleID, "HTTP_X_TEAM_ID": teamID]
    /// Placeholders a request body may carry: a fresh authentic challenge and its hash.
    static let challengePlaceholder = Array("@CHALLENGE@".utf8)
    static let hashPlaceholder = Array("@CDH@".utf8)

    /// The clock runs from `FuzzKeys.verifyAt` for this long, then starts over: the test
    /// certificates stay valid and the used challenges stay few.
    static let clockCycleSeconds: Int64 = 3600

    let path: String
    let clock: FixedClock
    let context: ServiceContext
    /// The enrolled device (`FuzzKeys.device`), so refresh bodies reach the stored key.
    var device: SoftwareDevice

    init() {
        var template = Array("/tmp/attest-fuzz-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        clock = FixedClock(FuzzKeys.verifyAt)
        let pki = FuzzKeys.pki
        let data = DataDirectory(path)
        var config = Configuration()
        config.durableMapSizeMiB = 16
        config.ephemeralMapSizeMiB = 16
        config.validatePerIPPerMinute = 0
        config.refreshPerIPPerMinute = 0
        let clock = self.clock
        context = setUp("service context") {
            try data.initialise(configuration: config, now: clock.now())
            let store = try Store(directory: data.storeDirectory, options: config.storeOptions)
            try store.write { txn in
                try txn.put(OrgRecord(name: "fuzz", tier: .pro, createdAt: clock.now()))
                try txn.put(AppRecord(teamID: Self.teamID, bundleID: Self.bundleID, org: "fuzz", policy: .both,
                                      createdAt: clock.now()))
            }
            return try ServiceContext(configuration: config, store: store, clock: clock, random: SystemRandom(),
                                      challengeSecret: data.challengeSecret(), trustAnchors: [pki.rootCertificate],
                                      keyRing: KeyRing(data))
        }
        device = setUp("device") { try SoftwareDevice(key: FuzzKeys.device) }
        enroll()
    }

    /// Removes the data directory (replays in tests end here; a fuzzer exits without it).
    deinit { FuzzFiles.removeTree(path) }

    /// Validates the fixed device once, through the endpoint, so refreshes find its key.
    private func enroll() {
        let challenge = freshChallenge()
        let hash = SHA256.hash(challenge.utf8)
        let (keyID, object) = setUp("attestation") {
            try device.attest(clientDataHash: hash, appID: Self.appID, pki: FuzzKeys.pki, at: clock.now())
        }
        let body: JSONValue = ["challenge": .string(challenge), "keyId": .string(Base64.encode(keyID)),
                               "attestationObject": .string(Base64.encode(object)),
                               "clientDataHash": .string(Base64.encode(hash)),
                               "bundleId": .string(Self.bundleID), "teamId": .string(Self.teamID)]
        let response = respond(Request(method: "POST", path: Endpoint.validate.path, params: Self.appHeaders,
                                       body: body.jsonBytes))
        expect(response.status == 200,
               "enrolling the fuzz device: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
    }

    /// A challenge bound to the fuzz app, as the challenge endpoint issues it.
    func freshChallenge() -> String {
        let response = respond(Request(method: "GET", path: Endpoint.challenge.path, params: Self.appHeaders))
        guard let text = (try? JSONParser.parse(response.body))?["challenge"]?.stringValue else {
            fatalError("fuzz set-up failed: no challenge (\(response.status))")
        }
        return text
    }

    /// The body with its placeholders replaced: `@CHALLENGE@` by a fresh challenge and
    /// `@CDH@` by the base64 SHA-256 of that challenge.
    func substitute(_ body: [UInt8]) -> [UInt8] {
        guard body.firstRange(of: Self.challengePlaceholder) != nil
                || body.firstRange(of: Self.hashPlaceholder) != nil else {
            return body
        }
        let challenge = freshChallenge()
        var out = body
        out.replace(Self.challengePlaceholder, with: Array(challenge.utf8))
        out.replace(Self.hashPlaceholder, with: Array(Base64.encode(SHA256.hash(challenge.utf8)).utf8))
        return out
    }

    /// Routes a request to its endpoint by path, as nginx does; another path is a JSON 404.
    func respond(_ request: Request) -> Response {
        clock.advance(1)
        if clock.now() > FuzzKeys.verifyAt + Self.clockCycleSeconds { clock.set(FuzzKeys.verifyAt) }
        guard let endpoint = Endpoint.allCases.first(where: { $0.path == request.path }) else {
            return .json(404,
                         #"{"error":"no such endpoint","code":"not_found","requestId":"","reason":"no such endpoint"}"#)
        }
        return endpoint.handle(request, context)
    }

    /// Every answer is JSON with a documented status; errors carry the envelope with the
    /// request's id and `reason` equal to `error`.
    static func checkAnswer(_ response: Response, requestID: String) {
        let allowed: Set<Int> = [200, 400, 401, 402, 403, 404, 405, 409, 413, 429, 503]
        expect(allowed.contains(response.status),
               "status \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        guard let body = try? JSONParser.parse(response.body), body.objectValue != nil else {
            fatalError("fuzz property violated: body is not a JSON object (status \(response.status))")
        }
        guard response.status != 200 else { return }
        expect(body["code"]?.stringValue != nil, "error without a code")
        expect(body["error"]?.stringValue != nil && body["reason"] == body["error"], "error without error/reason")
        if response.status != 404 || body["code"]?.stringValue != "not_found" || body["requestId"]?.stringValue != "" {
            expect(body["requestId"]?.stringValue == requestID, "requestId is not the request's")
        }
    }
}

/// A FastCGI responder over the fuzz service (routes by path).
struct FuzzResponder: Responder {
    let service: FuzzService
    mutating func respond(to request: Request) -> Response { service.respond(request) }
}
