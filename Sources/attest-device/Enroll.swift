import AttestCore
import AttestTesting
import CLISupport

/// `enroll`: a new key, attested through the server's validate endpoint.
enum Enroll {
    static func run(_ o: DeviceOptions) throws -> Int32 {
        let pki = try o.testCA()
        var device = try SoftwareDevice.generate()
        let challenge = try o.challenge()
        let body = try validateBody(device, challenge: challenge, options: o, pki: pki, receipts: try o.testReceipts())
        let (status, response, text) = try o.post("/api/v1/attestation/validate", body)
        guard status == 200, let token = response["token"]?.stringValue else {
            throw o.refused("validate", status, response, text)
        }
        let intelligence = response["deviceIntelligence"] ?? .null
        device.fields = ["server": o.server, "appID": o.appID, "token": token,
                         "expiresAt": response["expiresAt"]?.stringValue ?? "",
                         "deviceId": intelligence["deviceId"]?.stringValue ?? ""]
        try o.save(device)
        if o.json {
            Output.out(text)
        } else {
            Output.out("""
                enrolled \(o.appID)
                  keyId       \(Base64.encode(device.keyID))
                  deviceId    \(device.fields["deviceId"] ?? "")
                  risk        \(intelligence["riskCategory"]?.stringValue ?? "?") \
                (score \(intelligence["riskScore"]?.jsonText ?? "?"))
                  token until \(device.fields["expiresAt"] ?? "")
                  state       \(o.statePath)
                """)
        }
        return 0
    }

    /// The validate request body for `device` answering `challenge`.
    static func validateBody(_ device: SoftwareDevice, challenge: String, options o: DeviceOptions,
                             pki: TestPKI, receipts: TestReceiptAuthority?) throws -> JSONValue {
        let clientDataHash = SHA256.hash(challenge.utf8)
        let attested = try device.attest(clientDataHash: clientDataHash, appID: o.appID, environment: o.environment,
                                         pki: pki, receipts: receipts, at: currentTime())
        var members: [(String, JSONValue)] = [
            ("challenge", .string(challenge)), ("keyId", .string(Base64.encode(attested.keyID))),
            ("attestationObject", .string(Base64.encode(attested.attestationObject))),
            ("clientDataHash", .string(Base64.encode(clientDataHash))),
            ("bundleId", .string(o.bundleID)), ("teamId", .string(o.teamID)),
            ("deviceModel", .string(o.args.value("device-model") ?? "attest-device")),
            ("osVersion", .string(o.args.value("os-version") ?? "18.0")),
            ("appVersion", .string(o.args.value("app-version") ?? "1.0")),
            ("appBuildNumber", .string(o.args.value("app-build") ?? "1")),
            ("platform", .string(o.args.value("platform") ?? "iOS")),
        ]
        if let f = o.args.value("fingerprint") { members.append(("deviceFingerprint", .string(f))) }
        if let s = o.args.value("subject") { members.append(("subjectId", .string(s))) }
        return .object(members)
    }
}
