#if canImport(Glibc)
import Glibc
#endif
import AttestCore
import AttestTesting
import CLISupport

/// `refresh`: an assertion with the next counter, exchanged for a new token.
enum RefreshCommand {
    static func run(_ o: DeviceOptions) throws -> Int32 {
        var device = try o.loadDevice()
        let challenge = try o.challenge()
        let body = try refreshBody(&device, challenge: challenge, options: o)
        // The counter advanced on the device whatever the server says, as on real hardware.
        try o.save(device)
        let (status, response, text) = try o.post("/api/v1/attestation/refresh", body)
        guard status == 200, let token = response["token"]?.stringValue else {
            throw o.refused("refresh", status, response, text)
        }
        device.fields["token"] = token
        device.fields["expiresAt"] = response["expiresAt"]?.stringValue ?? ""
        try o.save(device)
        if o.json { Output.out(text) } else {
            Output.out("refreshed: counter \(device.counter), token until \(device.fields["expiresAt"] ?? "")")
        }
        return 0
    }

    /// The refresh request body: advances the device's counter by one.
    static func refreshBody(_ device: inout SoftwareDevice, challenge: String,
                            options o: DeviceOptions) throws -> JSONValue {
        let clientDataHash = SHA256.hash(challenge.utf8)
        let assertion = try device.assert(clientDataHash: clientDataHash, appID: o.appID)
        var members: [(String, JSONValue)] = [
            ("keyId", .string(Base64.encode(device.keyID))), ("assertion", .string(Base64.encode(assertion))),
            ("clientDataHash", .string(Base64.encode(clientDataHash))), ("challenge", .string(challenge)),
        ]
        if let s = o.args.value("subject") { members.append(("subjectId", .string(s))) }
        return .object(members)
    }
}

/// `heartbeat`: marks the device active for the month with its token, as the SDK does; with
/// `--api-key KEY --device-id ID`, as the SDK does in simulator and CI builds (no app headers,
/// no attestation, no state file needed).
enum Heartbeat {
    static func run(_ o: DeviceOptions) throws -> Int32 {
        let (status, response, text): (Int, JSONValue, String)
        if let apiKey = o.args.value("api-key") {
            guard let deviceID = o.args.value("device-id") else { throw UsageError("--api-key needs --device-id ID") }
            let sent = try o.client.send("POST", o.server + "/api/v1/heartbeat",
                                         headers: [("Authorization", "Bearer " + apiKey),
                                                   ("Content-Type", "application/json")],
                                         body: JSONValue.object([("sdkVersion", "attest-device"),
                                                                 ("appState", "active"),
                                                                 ("deviceId", .string(deviceID))]).jsonBytes)
            (status, response, text) = (sent.status, (try? JSONParser.parse(sent.body)) ?? .null, sent.text)
        } else {
            let device = try o.loadDevice()
            guard let token = device.fields["token"], !token.isEmpty else {
                throw DeviceFailure("no token saved: enroll first", status: 2)
            }
            (status, response, text) = try o.post("/api/v1/heartbeat",
                                                  ["sdkVersion": "attest-device", "appState": "active"],
                                                  headers: [("Authorization", "Bearer " + token)])
        }
        guard (200..<300).contains(status) else { throw o.refused("heartbeat", status, response, text) }
        Output.out(o.json ? text : "heartbeat accepted (interval \(response["interval"]?.jsonText ?? "?")s)")
        return 0
    }
}

/// `show`: the saved state.
enum Show {
    static func run(_ o: DeviceOptions) throws -> Int32 {
        let device = try o.loadDevice()
        var claims: JSONValue = .null
        if let token = device.fields["token"], let jwt = try? JWT(compact: token) { claims = jwt.claims }
        let state: JSONValue = .object([
            ("appId", .string(device.fields["appID"] ?? o.appID)), ("keyId", .string(Base64.encode(device.keyID))),
            ("deviceId", .string(device.fields["deviceId"] ?? "")), ("counter", .int(Int64(device.counter))),
            ("expiresAt", .string(device.fields["expiresAt"] ?? "")), ("claims", claims),
        ])
        if o.json { Output.out(state.prettyJSONText) } else {
            for (k, v) in state.objectValue! where k != "claims" {
                Output.out("\(Output.pad(k, 10)) \(v.stringValue ?? v.jsonText)")
            }
            if case .object(let members) = claims {
                Output.out("token claims:")
                for (k, v) in members { Output.out("  \(Output.pad(k, 20)) \(v.stringValue ?? v.jsonText)") }
            }
        }
        return 0
    }
}

func currentTime() -> Timestamp {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Timestamp(seconds: Int64(ts.tv_sec))
}
