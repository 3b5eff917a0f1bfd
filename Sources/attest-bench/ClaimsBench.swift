import AttestCore
import AttestService
import AttestStore
import AttestTesting
import CLISupport

/// `attest-bench claims`: what evaluating an app's custom claims adds to a refresh, as a
/// ratio to the ES256 signature every token costs anyway, on one thread of CPU time.
///
/// Measured: parsing the stored claims text of 20 conditional claims (the enterprise limit;
/// a worker parses it again whenever its app cache missed) plus building the profile,
/// scoring the risk and evaluating every rule; and the same with the text parsed once.
enum ClaimsBench {
    static func run(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["seconds"], switches: [])
        let seconds = Double(try args.int("seconds", default: 2, in: 1...600))
        let properties = ["riskScore le 20", "appVersion ge 2.1", "platform in [\"iOS\",\"iPadOS\"]",
                          "subscribed eq true", "attestationCount gt 2", "osVersion lt 17.4", "riskCategory ne trusted",
                          "environment eq production", "deviceModel eq iPhone15,2", "riskScore gt 75"]
        let rules: [ClaimRule]
        do {
            rules = try (0..<20).map { i throws(ServiceError) in
                ClaimRule(key: "claim\(i % 7)", value: ["seats": .int(Int64(i)), "tier": "gold"],
                          condition: try ClaimCondition(text: properties[i % properties.count], claim: "claim\(i)"))
            }
        } catch {
            throw BenchError(error.message)
        }
        let stored = CustomClaims.encode(rules)
        let app = AppRecord(teamID: "ABCDE12345", bundleID: "com.example.app", org: "bench", customClaimsJSON: stored,
                            minAppVersion: "2.0", createdAt: Timestamp(seconds: 0))
        let now = Timestamp(seconds: 1_800_000_000)
        let device = DeviceRecord(keyID: [UInt8](repeating: 1, count: 32), deviceID: "bench", appID: app.appID,
                                  publicKey: [4], environment: .production, createdAt: now,
                                  metadata: .init(deviceModel: "iPhone15,2", osVersion: "17.2", appVersion: "2.3.1",
                                                  platform: "iOS"))
        var lineage = LineageRecord()
        lineage.noteAttestation(device.keyID, at: now - 100)
        let subject = SubjectRecord(subjectID: "house", createdAt: now,
                                    entitlements: [.init(name: "premium", grantedAt: now, until: nil)])
        let signer = try JWTSigner(key: try SigningKey.generate(.p256))
        let claims: JSONValue = ["sub": "bench", "iat": .int(now.seconds), "custom_claims": ["a": 1]]
        var sink = 0
        func evaluate(_ rules: [ClaimRule]) {
            let profile = DeviceProfile(device: device, lineage: lineage, subject: subject, now: now)
            sink &+= DeviceAssessment(profile: profile, app: app, rules: rules).claims.count
        }
        let parsed = Throughput.compare(seconds: seconds, { evaluate((try? CustomClaims.parse(stored)) ?? []) },
                                        { sink &+= (try? signer.sign(claims))?.utf8.count ?? 0 })
        let cached = Throughput.compare(seconds: seconds, { evaluate(rules) },
                                        { sink &+= (try? signer.sign(claims))?.utf8.count ?? 0 })
        Output.out("custom claims (20 conditional) vs one ES256 token signature: one thread, CPU time\n")
        Output.out(Output.table(["measurement", "per second", "sign/s", "cost ÷ signature"], [
            ["parse + risk + evaluate", String(format0: parsed.a), String(format0: parsed.b),
             String(format2: 1 / parsed.ratio)],
            ["risk + evaluate (parsed)", String(format0: cached.a), String(format0: cached.b),
             String(format2: 1 / cached.ratio)],
        ]))
        if sink == 42 { Output.out("") }
        return 0
    }
}
