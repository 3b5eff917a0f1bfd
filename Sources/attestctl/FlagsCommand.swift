import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport

#if canImport(Glibc)
import Glibc
#endif

/// `attestctl flags …`: an app's feature flags, environments, rules, rollouts and overrides.
/// Every change goes through `FeatureFlagAdmin` (the org API's checks and tier limits), queues
/// `flag.changed`, and is published to this host's flag stream once committed (a failed
/// publish is a warning: the stream catches up at its next connect).
let flagsCommand = Command(
    name: "flags",
    summary: "feature flags: add, set, rules, rollouts, overrides, environments, test",
    usage: """
        usage: attestctl flags add --app ID --key K --type bool|int|double|string|json --value JSON [--env E]
                                   [--description TEXT]
               attestctl flags set --app ID --key K --value JSON [--env E]
               attestctl flags unset --app ID --key K --env E
               attestctl flags rule add --app ID --key K --value JSON --when 'ATTR OP VALUE' [--when …]
                                        [--name N] [--env E] [--rollout P] [--at INDEX]
               attestctl flags rule remove --app ID --key K --index N
               attestctl flags rollout --app ID --key K --percent P [--value JSON] [--env E]
               attestctl flags override set --app ID --key K (--device KEY|DEVICEID | --sdk-device-id X)
                                            --value JSON [--until DATE] [--note TEXT]
               attestctl flags override remove --app ID --key K (--device KEY|DEVICEID | --sdk-device-id X)
               attestctl flags override list --app ID [--key K] [--json]
               attestctl flags env add|remove --app ID NAME
               attestctl flags env list --app ID [--json]
               attestctl flags list --app ID [--env E] [--json]
               attestctl flags show --app ID --key K [--json]
               attestctl flags remove --app ID --key K
               attestctl flags test --app ID [--env E] (--device KEY|DEVICEID | --profile JSON | --api-key)
                                    [--header 'X-Custom-plan: pro']… [--key K] [--json]
               (every form takes --data DIR)

        --env defaults to production. Values are JSON ('true', '42', '"blue"', '{"a":1}').
        --when is ATTR OP VALUE with OP one of eq neq gt gte lt lte in not_in contains starts_with:
        'riskScore lte 20', 'custom.plan in ["pro","team"]', 'app_version gte 2.1'. Server
        attributes (riskScore, riskCategory, appVersion, osVersion, jailbroken, entitlement, …)
        take the server's values; app_version, os_version, device_model, country, user_id,
        device_id, locale and custom.<key> come from the SDK's headers and are client-claimed.
        A missing value fails every condition, neq and not_in too. A rollout of P percent gives
        its value to a stable P% of devices (after the rules, before the default); 0 removes it.
        test shows each flag's value for a stored device, a described profile (as 'claims test')
        or an API-key caller, and why.

        example: attestctl flags add --app ABCDE12345.com.example.app --key beta --type bool --value false
                 attestctl flags rule add --app ABCDE12345.com.example.app --key beta --value true \\
                     --when 'riskScore lte 20'
        """,
    run: { argv in
        var (sub, rest) = try subcommand(argv, ["add", "set", "unset", "rule", "rollout", "override", "env", "list",
                                                "show", "remove", "test"])
        if ["rule", "override", "env"].contains(sub) {
            let choices = sub == "rule" ? ["add", "remove", "enable", "disable"]
                : sub == "override" ? ["set", "remove", "list"] : ["add", "remove", "list"]
            let (second, more) = try subcommand(rest, choices)
            (sub, rest) = (sub + " " + second, more)
        }
        let args = try Arguments(rest, valued: ["data", "app", "key", "type", "value", "env", "description", "when",
                                                "name", "rollout", "at", "index", "percent", "device", "sdk-device-id",
                                                "until", "note", "profile", "header"],
                                 switches: ["json", "api-key"])
        let data = dataDirectory(args)
        let (config, store) = try openStore(data)
        guard let appID = args.value("app") else { throw UsageError("--app TEAMID.BUNDLE is required") }
        func key() throws -> String {
            guard let k = args.value("key") else { throw UsageError("--key is required") }
            return k
        }
        func value() throws -> String {
            guard let v = args.value("value") else { throw UsageError("--value JSON is required") }
            return v
        }
        /// One change: the admin's checks in one durable write, then the stream.
        func change<T>(_ body: (FeatureFlagAdmin, Transaction) throws -> (T, [FeatureFlagChange])) throws -> T {
            let (result, changes) = try claimFailure {
                try FeatureFlagAdmin.write(store: store, appID: appID, org: nil, actor: .cli, now: now(),
                                           random: SystemRandom(), queueEvents: config.webhookQueueEvents) { a, t in
                    let done = try body(a, t)
                    try CLIAudit(actor: cliActor(config),
                                 action: "flag." + sub.split(separator: " ").joined(separator: "_"),
                                 args: args).record(org: a.app.org, appID: appID, in: t)
                    return done
                }
            }
            publishFlagChanges(changes, data: data, store: store)
            return result
        }
        switch sub {
        case "add":
            guard let typeName = args.value("type"), let type = FeatureFlagType(rawValue: typeName) else {
                throw UsageError("--type is one of bool, int, double, string, json")
            }
            let k = try key(), v = try value()
            try change { a, t in
                ((), try a.addFlag(key: k, type: type, value: v, environment: args.value("env"),
                                   description: args.value("description") ?? "", in: t))
            }
            Output.out("added \(type.rawValue) flag \(k) to \(appID) = \(v) in \(args.value("env") ?? "production")")
        case "set":
            let k = try key(), v = try value()
            try change { a, t in ((), try a.setValue(key: k, value: v, environment: args.value("env"), in: t)) }
            Output.out("\(k) = \(v) in \(args.value("env") ?? "production")")
        case "unset":
            let k = try key()
            guard let env = args.value("env") else { throw UsageError("--env is required") }
            try change { a, t in ((), try a.unsetValue(key: k, environment: env, in: t)) }
            Output.out("\(k) has no value in \(env) now: left out of its answers")
        case "rule add":
            let k = try key(), v = try value()
            let whens = args.values("when")
            guard !whens.isEmpty else { throw UsageError("at least one --when 'ATTR OP VALUE' is required") }
            let conditions = try claimFailure { try whens.map { try FeatureFlagConditions.parse(text: $0) } }
            let rollout = try args.int("rollout", default: 100, in: 0...100)
            let at = try args.value("at").map { _ in try args.int("at", default: 1, in: 1...1000) }
            let rule = FeatureFlagRule(name: args.value("name") ?? "", environment: args.value("env") ?? "",
                                       active: true, rollout: UInt8(rollout), valueJSON: v, conditions: conditions)
            try change { a, t in ((), try a.addRule(key: k, rule: rule, at: at, in: t)) }
            Output.out("rule added to \(k): " + conditions.map(FeatureFlagConditions.text).joined(separator: " and ")
                       + " → \(v)" + (rollout < 100 ? " for \(rollout)%" : ""))
        case "rule remove", "rule enable", "rule disable":
            let k = try key()
            guard args.value("index") != nil else {
                throw UsageError("--index N (from 1, as 'flags show' lists) is required")
            }
            let index = try args.int("index", default: 1, in: 1...1000)
            try change { a, t in
                ((), sub == "rule remove" ? try a.removeRule(key: k, index: index, in: t)
                    : try a.setRuleActive(key: k, index: index, active: sub == "rule enable", in: t))
            }
            Output.out("\(k): rule \(index) \(sub == "rule remove" ? "removed" : sub.dropFirst(5) + "d")")
        case "rollout":
            let k = try key()
            guard args.value("percent") != nil else {
                throw UsageError("--percent P (0 to 100; 0 removes) is required")
            }
            let percent = try args.int("percent", default: 0, in: 0...100)
            try change { a, t in
                ((), try a.setRollout(key: k, environment: args.value("env"), percent: percent,
                                      value: args.value("value"), in: t))
            }
            Output.out(percent == 0 ? "\(k): rollout removed in \(args.value("env") ?? "production")"
                       : "\(k): \(percent)% get \(args.value("value") ?? "") in \(args.value("env") ?? "production")")
        case "override set", "override remove":
            let k = try key()
            let subject = try overrideSubject(args, store: store, appID: appID)
            if sub == "override set" {
                let v = try value()
                let until = try args.value("until").map { text -> Timestamp in
                    guard let t = Timestamp(iso8601: text) else {
                        throw UsageError("--until is an ISO 8601 date such as 2026-03-10T12:00:00Z")
                    }
                    return t
                }
                _ = try change { a, t in
                    try a.setOverride(key: k, subject: subject, value: v, expiresAt: until,
                                      note: args.value("note") ?? "", in: t)
                }
                Output.out("\(k) = \(v) for \(FeatureFlagAdmin.text(subject))"
                           + (until.map { " until \($0.iso8601)" } ?? "") + " (every environment)")
            } else {
                try change { a, t in ((), try a.removeOverride(key: k, subject: subject, in: t)) }
                Output.out("removed the override of \(k) for \(FeatureFlagAdmin.text(subject))")
            }
        case "override list":
            let all = try claimFailure {
                try store.read { txn in
                    _ = try FeatureFlagAdmin.app(appID, org: nil, in: txn)
                    return try txn.featureFlagOverrides(appID: appID)
                }
            }.filter { o in args.value("key").map { $0 == o.flagKey } ?? true }
            if args.flag("json") {
                Output.out(JSONValue.array(all.map { FlagsAdminEndpoint.json($0) }).prettyJSONText)
            } else if all.isEmpty {
                Output.out("no overrides")
            } else {
                Output.out(Output.table(["FLAG", "SUBJECT", "VALUE", "EXPIRES", "NOTE"], all.map {
                    [$0.flagKey, FeatureFlagAdmin.text($0.subject), $0.valueJSON, $0.expiresAt?.iso8601 ?? "never",
                     $0.note]
                }))
            }
        case "env add", "env remove":
            let name = try args.positional(0, "the environment's NAME")
            try change { a, t in
                ((), sub == "env add" ? try a.addEnvironment(name, in: t) : try a.removeEnvironment(name, in: t))
            }
            Output.out(sub == "env add" ? "environment \(name) added to \(appID)"
                       : "environment \(name) removed from \(appID), with every flag's value, rollout and rules in it")
        case "env list":
            let envs = try claimFailure {
                try store.read { txn in
                    let (app, org) = try FeatureFlagAdmin.app(appID, org: nil, in: txn)
                    let admin = FeatureFlagAdmin(app: app, tier: org.tier, actor: .cli, now: now(),
                                                 random: SystemRandom())
                    return try admin.state(in: txn).environments
                }
            }
            if args.flag("json") {
                Output.out(JSONValue.array(envs.map { FlagsAdminEndpoint.json($0) }).prettyJSONText)
            } else {
                Output.out(Output.table(["ENVIRONMENT", "CREATED"], envs.map { [$0.name, $0.createdAt.iso8601] }))
            }
        case "list", "show":
            let flags = try claimFailure {
                try store.read { txn in
                    _ = try FeatureFlagAdmin.app(appID, org: nil, in: txn)
                    return try txn.featureFlags(appID: appID)
                }
            }
            if sub == "show" {
                let k = try key()
                guard let flag = flags.first(where: { $0.key == k }) else {
                    throw CommandFailure(.notFound,
                                         "no flag \(k) in \(appID) (see 'attestctl flags list --app \(appID)')")
                }
                if args.flag("json") {
                    Output.out(FlagsAdminEndpoint.json(flag).prettyJSONText)
                } else {
                    Output.out(showText(flag))
                }
            } else if args.flag("json") {
                Output.out(JSONValue.array(flags.map { FlagsAdminEndpoint.json($0) }).prettyJSONText)
            } else if flags.isEmpty {
                Output.out("no flags in \(appID) (add one with 'attestctl flags add')")
            } else {
                let env = args.value("env") ?? "production"
                let header = ["KEY", "TYPE", "VALUE (\(env))", "ROLLOUT", "RULES", "DESCRIPTION"]
                Output.out(Output.table(header, flags.map { f in
                    [f.key, f.type.rawValue, f.defaults.first { $0.environment == env }?.valueJSON ?? "-",
                     f.rollouts.first { $0.environment == env }.map { "\($0.percent)% → \($0.valueJSON)" } ?? "-",
                     String(f.rules.count), f.description]
                }))
            }
        case "remove":
            let k = try key()
            try change { a, t in ((), try a.removeFlag(key: k, in: t)) }
            Output.out("removed flag \(k) and its overrides from \(appID)")
        default:
            try testFlags(args, store: store, appID: appID)
        }
        return 0
    })

/// `--device KEY|DEVICEID` (a device of this app) or `--sdk-device-id X`.
private func overrideSubject(_ args: Arguments, store: Store, appID: String) throws -> FeatureFlagOverrideSubject {
    switch (args.value("device"), args.value("sdk-device-id")) {
    case (let d?, nil):
        let device = try findDevice(d, store)
        guard device.appID == appID else {
            throw CommandFailure(.failed, "device \(device.deviceID) belongs to \(device.appID), not \(appID)")
        }
        return .device(device.deviceID)
    case (nil, let s?): return .sdk(s)
    default: throw UsageError("give one of --device KEY|DEVICEID or --sdk-device-id X")
    }
}

private func showText(_ f: FeatureFlagRecord) -> String {
    var lines = ["\(f.key) (\(f.type.rawValue))" + (f.description.isEmpty ? "" : ": \(f.description)")]
    for d in f.defaults { lines.append("  default \(d.environment): \(d.valueJSON)") }
    for r in f.rollouts { lines.append("  rollout \(r.environment): \(r.percent)% → \(r.valueJSON)") }
    for (i, r) in f.rules.enumerated() {
        lines.append("  rule \(i + 1) '\(r.name)'\(r.active ? "" : " (disabled)") in "
                     + (r.environment.isEmpty ? "every environment" : r.environment) + ": "
                     + r.conditions.map(FeatureFlagConditions.text).joined(separator: " and ")
                     + " → \(r.valueJSON)" + (r.rollout < 100 ? " for \(r.rollout)%" : ""))
    }
    lines.append("  created \(f.createdAt.iso8601), updated \(f.updatedAt.iso8601)")
    return lines.joined(separator: "\n")
}

/// `flags test`: each flag's value for a stored device, a described profile or an API-key
/// caller, with the steps that decided it.
private func testFlags(_ args: Arguments, store: Store, appID: String) throws {
    let env = args.value("env") ?? "production"
    var headers = [(name: String, value: String)]()
    for line in args.values("header") {
        let parts = line.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { throw UsageError("--header is 'Name: value', got \"\(line)\"") }
        headers.append((String(parts[0]).trimmingWhitespace, String(parts[1]).trimmingWhitespace))
    }
    let targeting = FeatureFlagTargeting(headers: headers)
    let at = now()
    let device = try args.value("device").map { try findDevice($0, store) }
    let (compiled, caller, overrides) = try claimFailure {
        try store.read { txn -> (CompiledFeatureFlags, FeatureFlagCaller, [FeatureFlagOverrideRecord]) in
            let (app, org) = try FeatureFlagAdmin.app(appID, org: nil, in: txn)
            let compiled = try CompiledFeatureFlags.build(appID: appID, tier: org.tier, in: txn)
            let caller: FeatureFlagCaller
            switch (device, args.value("profile"), args.flag("api-key")) {
            case (let d?, nil, false):
                guard d.appID == appID else {
                    throw CommandFailure(.failed, "device \(d.deviceID) belongs to \(d.appID), not \(appID)")
                }
                caller = .device(try FeatureFlagDevice.read(d, app: app, org: org, now: at, in: txn))
            case (nil, let p?, false):
                let profile = try DeviceProfile(profileJSON: p)
                caller = .device(FeatureFlagDevice(deviceID: "(described)",
                                                   lineageDigest: Array(SHA256.hash(Array(p.utf8)).prefix(16)),
                                                   profile: profile, risk: RiskAssessment(profile, app: app)))
            case (nil, nil, true):
                caller = .apiKey(sdkDeviceID: targeting.sdkDeviceID)
            default:
                throw UsageError("give one of --device KEY|DEVICEID, --profile JSON or --api-key")
            }
            var overrides = [FeatureFlagOverrideRecord]()
            if let d = device { overrides += try txn.featureFlagOverrides(appID: appID, subject: .device(d.deviceID)) }
            if let sdk = targeting.sdkDeviceID {
                overrides += try txn.featureFlagOverrides(appID: appID, subject: .sdk(sdk))
            }
            return (compiled, caller, overrides)
        }
    }
    let explained = compiled.explain(environment: env, caller: caller, targeting: targeting, overrides: overrides,
                                     now: at, key: args.value("key"))
    if args.flag("json") {
        let answer = compiled.answer(environment: env, caller: caller, targeting: targeting, overrides: overrides,
                                     now: at)
        Output.out(JSONValue.object([
            ("environment", .string(env)),
            ("answer", (try? JSONParser.parse(answer)) ?? .null),
            ("flags", .array(explained.map { e in
                .object([("key", .string(e.key)),
                         ("value", e.valueJSON.flatMap { try? JSONParser.parse($0) } ?? .null),
                         ("served", .bool(e.valueJSON != nil)), ("steps", .array(e.steps.map { .string($0) }))])
            })),
        ]).prettyJSONText)
    } else if explained.isEmpty {
        Output.out("no flags in \(appID)")
    } else {
        for e in explained {
            Output.out("\(e.key) = \(e.valueJSON ?? "(left out)")")
            for step in e.steps { Output.out("  " + step) }
        }
    }
}

/// Publishes committed changes to this host's flag stream (the socket directory as
/// `attestctl doctor` finds it); a failure is a warning. No publisher socket where serve's
/// pools or the units' /run/attestedge are: nginx is down or reloading, which is a warning too
/// (new streams get the change at connect: the auth handler republishes a stale channel).
/// Neither there: no stream runs on this host, nothing to tell.
func publishFlagChanges(_ changes: [FeatureFlagChange], data: DataDirectory, store: Store) {
    let directory = Doctor.socketDirectory(data)
    let socket = FlagChannel.publishSocket(socketDirectory: directory)
    guard !changes.isEmpty else { return }
    guard access(socket, F_OK) == 0 else {
        if poolsRunFrom(directory) {
            Output.err("attestctl: warning: flag stream: \(socket) is missing (is nginx running?): the change is "
                       + "stored; open streams do not get it, new streams get it when they connect")
        }
        return
    }
    for warning in FlagStream.publish(changes, socketDirectory: directory, store: store) {
        Output.err("attestctl: warning: \(warning)")
    }
}

/// Ends this host's flag streams held by `holders` (a device revoked or blocked, an API key
/// revoked: `FlagStream.close`), so that their clients are authorised again now, not at the
/// stream's `flags.streamMaxSeconds`. Twice, `closeAgainAfter` apart: a stream whose auth read
/// the old standing just before the commit may subscribe after the first delete (the auth
/// handler reads the standing again as its last step, so this covers nginx's own delay). No
/// publisher socket where the pools run is a warning, as for `flags set`; none at all: no
/// stream runs here. The change itself is stored either way.
func closeFlagStreams(_ holders: [String], data: DataDirectory) {
    let directory = Doctor.socketDirectory(data)
    guard access(FlagChannel.publishSocket(socketDirectory: directory), F_OK) == 0 else {
        if poolsRunFrom(directory) {
            Output.err("attestctl: warning: flag stream: \(FlagChannel.publishSocket(socketDirectory: directory)) is "
                       + "missing (is nginx running?): open streams end within flags.streamMaxSeconds")
        }
        return
    }
    var warnings = FlagStream.close(holders: holders, socketDirectory: directory)
    usleep(closeAgainAfterMicroseconds)
    warnings += FlagStream.close(holders: holders, socketDirectory: directory)
    for warning in Set(warnings).sorted() { Output.err("attestctl: warning: \(warning)") }
}

/// The pause between `closeFlagStreams`' two deletes.
let closeAgainAfterMicroseconds: UInt32 = 300_000

/// Whether pools run with their sockets in `directory` (serve's), or the units' sockets exist:
/// then a missing publisher socket means nginx is down, not that no stream runs here.
func poolsRunFrom(_ directory: String) -> Bool {
    Endpoint.allCases.contains { FileIO.exists(directory + "/\($0.rawValue).sock") }
        || FileIO.exists(Doctor.systemdSockets)
}
