import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl device show|list|revoke|flag`.
let deviceCommand = Command(
    name: "device",
    summary: "show, list, revoke and flag attested devices",
    usage: """
        usage: attestctl device show KEY [--json] [--data DIR]
               attestctl device list [--app APPID] [--limit N] [--json] [--data DIR]
               attestctl device revoke KEY [--reason TEXT] [--data DIR]
               attestctl device flag KEY --jailbroken | --block | --clear [--reason TEXT] [--data DIR]

        KEY is the keyId exactly as the device sends it (base64) or the deviceId. A revoked
        device's refreshes answer 403 forbidden; it must attest a new key. revoke and --block
        also end the device's open flag streams on this host (their reconnects get 403).
        show adds the risk score's factors, the attestation history of the device's fingerprint,
        its flag changes and the key's receipt (what validate's check found, its fields, its
        redemption with Apple and the risk metrics received). flag applies to the device and to
        every key of its fingerprint, now and later: --jailbroken raises the risk to at least 80,
        --block makes refresh 403 and validate isValid false, --clear removes both. Every change
        is kept with its reason.

        example: attestctl device show 0f3c9a1e5b7d2c44a1b2c3d4e5f60718 --json   (a deviceId, or the keyId as sent)
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["show", "list", "revoke", "flag"])
        let args = try Arguments(rest, valued: ["data", "app", "limit", "reason"],
                                 switches: ["json", "jailbroken", "block", "clear"])
        let (config, store) = try openStore(dataDirectory(args))
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
                    [$0.deviceID, $0.appID, $0.environment.rawValue, $0.status.name, String($0.counter),
                     $0.lastSeenAt.iso8601]
                }))
            }
        case "show":
            let device = try findDevice(try args.positional(0, "KEY (keyId or deviceId)"), store)
            try showDevice(device, store: store, json: args.flag("json"))
        case "flag":
            let device = try findDevice(try args.positional(0, "KEY (keyId or deviceId)"), store)
            let chosen = DeviceFlags.Action.allCases.filter {
                args.flag($0 == .jailbroken ? "jailbroken" : $0.rawValue)
            }
            guard chosen.count == 1 else { throw UsageError("give exactly one of --jailbroken, --block, --clear") }
            let audit = CLIAudit(actor: cliActor(config),
                                 action: chosen[0] == .jailbroken ? "device.flag" : "device." + chosen[0].rawValue,
                                 target: OrgDeviceWire.keyID(device.keyID), detail: args.value("reason") ?? "")
            let change = try claimFailure {
                try DeviceFlags.apply(chosen[0], keyID: device.keyID, reason: args.value("reason") ?? "", store: store,
                                      random: SystemRandom(), now: now(), queueEvents: config.webhookQueueEvents,
                                      within: { txn in
                                          try audit.record(org: (try txn.app(id: device.appID))?.org ?? "",
                                                           appID: device.appID, in: txn)
                                      })
            }
            if change.flags.contains(.blocked) {
                closeFlagStreams([FlagChannel.holder(lineage: LineageKey.of(change.device))], data: dataDirectory(args))
            }
            Output.out("device \(device.deviceID) (\(device.appID)): flags \(change.previous.names) → "
                       + "\(change.flags.names) on \(change.keys) key(s)"
                       + "\(device.fingerprint.isEmpty ? "" : " of fingerprint \(device.fingerprint)")")
        default:
            let key = try args.positional(0, "KEY (keyId or deviceId)")
            let device = try findDevice(key, store)
            try store.write([.durable]) { txn in
                guard var current = try txn.device(keyID: device.keyID) else {
                    throw CommandFailure(.failed, "device vanished")
                }
                current.status = .revoked
                try txn.put(current)
                try txn.put(RevocationRecord(at: now(), by: cliActor(config).describedBy,
                                             reason: args.value("reason") ?? ""), keyID: device.keyID)
                if let app = try txn.app(id: device.appID) {
                    try OrgAudit.record(cliActor(config), org: app.org, action: "device.revoke",
                                        target: OrgDeviceWire.keyID(device.keyID), detail: args.value("reason") ?? "",
                                        at: now(), in: txn)
                }
            }
            closeFlagStreams([FlagChannel.holder(lineage: LineageKey.of(device))], data: dataDirectory(args))
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
    guard let found else {
        throw CommandFailure(.notFound, "no device with keyId or deviceId \"\(key)\" (see 'attestctl device list')")
    }
    return found
}

func deviceJSON(_ d: DeviceRecord) -> JSONValue {
    .object([
        ("deviceId", .string(d.deviceID)), ("keyId", .string(Base64.encode(d.keyID))), ("appId", .string(d.appID)),
        ("environment", .string(d.environment.rawValue)), ("status", .string(d.status.name)),
        ("counter", .int(Int64(d.counter))),
        ("attestationCount", .int(Int64(d.attestationCount))), ("failedAssertions", .int(Int64(d.failedAssertions))),
        ("jailbreakFlagged", .bool(d.operatorFlags.contains(.jailbreak))),
        ("blockedFlagged", .bool(d.operatorFlags.contains(.blocked))),
        ("createdAt", .string(d.createdAt.iso8601)), ("lastAttestedAt", .string(d.lastAttestedAt.iso8601)),
        ("lastSeenAt", .string(d.lastSeenAt.iso8601)), ("fingerprint", .string(d.fingerprint)),
        ("subjectId", .string(d.subjectID)),
        ("deviceModel", .string(d.metadata.deviceModel)), ("osVersion", .string(d.metadata.osVersion)),
        ("appVersion", .string(d.metadata.appVersion)), ("appBuildNumber", .string(d.metadata.appBuildNumber)),
        ("platform", .string(d.metadata.platform)), ("publicKey", .string(Base64.encode(d.publicKey))),
        ("validationCategory", d.validationCategory.map { .int(Int64($0)) } ?? .null),
        ("bundleVersion", .string(d.bundleVersion)),
        ("appleRiskMetric", d.appleRiskMetric.map { .int(Int64($0)) } ?? .null),
        ("appleRiskMetricAt", d.appleRiskMetricAt.map { .string($0.iso8601) } ?? .null),
        ("receiptCheck", .string(d.receiptCheck.name)),
    ])
}
