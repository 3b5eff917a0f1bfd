import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl device show|list|revoke`.
let deviceCommand = Command(
    name: "device",
    summary: "show, list and revoke attested devices",
    usage: """
        usage: attestctl device show KEY [--json] [--data DIR]
               attestctl device list [--app APPID] [--limit N] [--json] [--data DIR]
               attestctl device revoke KEY [--data DIR]

        KEY is the keyId exactly as the device sends it (base64) or the deviceId. A revoked
        device's refreshes answer 403 forbidden; it must attest a new key.
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["show", "list", "revoke"])
        let args = try Arguments(rest, valued: ["data", "app", "limit"], switches: ["json"])
        let (_, store) = try openStore(dataDirectory(args))
        switch sub {
        case "list":
            let limit = try args.int("limit", default: 1000, in: 1...1_000_000)
            let app = args.value("app")
            let devices = try store.read { try $0.devices() }.filter { app == nil || $0.appID == app }.prefix(limit)
            if args.flag("json") {
                Output.out(JSONValue.array(devices.map(deviceJSON)).prettyJSONText)
            } else if devices.isEmpty {
                Output.out("no devices")
            } else {
                Output.out(Output.table(["DEVICE ID", "APP ID", "ENV", "STATUS", "COUNTER", "LAST SEEN"], devices.map {
                    [$0.deviceID, $0.appID, $0.environment.rawValue, $0.status.name, String($0.counter), $0.lastSeenAt.iso8601]
                }))
            }
        case "show":
            let device = try findDevice(try args.positional(0, "KEY (keyId or deviceId)"), store)
            if args.flag("json") {
                Output.out(deviceJSON(device).prettyJSONText)
            } else {
                for (k, v) in deviceJSON(device).objectValue! { Output.out("\(Output.pad(k, 20)) \(v.stringValue ?? v.jsonText)") }
            }
        default:
            let key = try args.positional(0, "KEY (keyId or deviceId)")
            let device = try findDevice(key, store)
            try store.write([.durable]) { txn in
                guard var current = try txn.device(keyID: device.keyID) else { throw CommandFailure("device vanished") }
                current.status = .revoked
                try txn.put(current)
            }
            Output.out("revoked device \(device.deviceID) (\(device.appID)): its refreshes now answer 403")
        }
        return 0
    })

func findDevice(_ key: String, _ store: Store) throws -> DeviceRecord {
    let found = try store.read { txn -> DeviceRecord? in
        if let byID = try txn.device(deviceID: key) { return byID }
        if let keyID = Base64.decode(key), keyID.count == 32 { return try txn.device(keyID: keyID) }
        return nil
    }
    guard let found else { throw CommandFailure("no device with keyId or deviceId \"\(key)\"") }
    return found
}

func deviceJSON(_ d: DeviceRecord) -> JSONValue {
    .object([
        ("deviceId", .string(d.deviceID)), ("keyId", .string(Base64.encode(d.keyID))), ("appId", .string(d.appID)),
        ("environment", .string(d.environment.rawValue)), ("status", .string(d.status.name)), ("counter", .int(Int64(d.counter))),
        ("attestationCount", .int(Int64(d.attestationCount))), ("failedAssertions", .int(Int64(d.failedAssertions))),
        ("jailbreakFlagged", .bool(d.operatorFlags.contains(.jailbreak))), ("blockedFlagged", .bool(d.operatorFlags.contains(.blocked))),
        ("createdAt", .string(d.createdAt.iso8601)), ("lastAttestedAt", .string(d.lastAttestedAt.iso8601)),
        ("lastSeenAt", .string(d.lastSeenAt.iso8601)), ("fingerprint", .string(d.fingerprint)), ("subjectId", .string(d.subjectID)),
        ("deviceModel", .string(d.metadata.deviceModel)), ("osVersion", .string(d.metadata.osVersion)),
        ("appVersion", .string(d.metadata.appVersion)), ("appBuildNumber", .string(d.metadata.appBuildNumber)),
        ("platform", .string(d.metadata.platform)), ("publicKey", .string(Base64.encode(d.publicKey))),
        ("validationCategory", d.validationCategory.map { .int(Int64($0)) } ?? .null), ("bundleVersion", .string(d.bundleVersion)),
    ])
}
