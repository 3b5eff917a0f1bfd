import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl claims add|list|remove|test`: an app's custom claims (docs/tokens.md, "Custom claims").
let claimsCommand = Command(
    name: "claims",
    summary: "add, list, remove and test an app's custom claims",
    usage: """
        usage: attestctl claims add --app TEAMID.BUNDLE --key KEY --value JSON [--when 'PROPERTY OP VALUE'] [--data DIR]
               attestctl claims list --app TEAMID.BUNDLE [--json] [--data DIR]
               attestctl claims remove --app TEAMID.BUNDLE --key KEY [--data DIR]
               attestctl claims test --app TEAMID.BUNDLE [--device KEY | --profile JSON] [--json] [--data DIR]

        Claims apply in order; a later claim with the same key wins. --value is JSON (bare text
        counts as a string). --when: PROPERTY is riskScore, riskCategory, environment, appVersion,
        osVersion, platform, deviceModel, attestationCount or subscribed; OP is eq, ne, lt, le,
        gt, ge or in (a JSON array). Numbers compare as numbers, versions as dotted versions.
        Tier limits: free 1 (no --when), pro 5, business 10, enterprise 20.
        test shows the risk and claims a stored device (KEY: keyId or deviceId) or a described
        profile would get now, and why, e.g. --profile '{"appVersion":"2.0","subscribed":true}'.

        example: attestctl claims add --app ABCDE12345.com.example.app --key tier --value '"gold"' \
        --when 'riskScore le 20'
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["add", "list", "remove", "test"])
        let args = try Arguments(rest, valued: ["data", "app", "key", "value", "when", "device", "profile"],
                                 switches: ["json"])
        guard let appID = args.value("app") else { throw UsageError("--app TEAMID.BUNDLE is required") }
        let (config, store) = try openStore(dataDirectory(args))
        switch sub {
        case "list":
            let rules = try loadRules(store, appID).rules
            if args.flag("json") {
                Output.out(JSONValue.array(rules.map(\.json)).prettyJSONText)
            } else if rules.isEmpty {
                Output.out("no custom claims for \(appID)")
            } else {
                Output.out(Output.table(["#", "KEY", "VALUE", "WHEN"], rules.enumerated().map {
                    [String($0.offset + 1), $0.element.key, $0.element.value.jsonText,
                     $0.element.condition?.text ?? "always"]
                }))
            }
        case "add":
            guard let key = args.value("key"), let valueText = args.value("value") else {
                throw UsageError("--key and --value are required")
            }
            let value = (try? JSONParser.parse(valueText)) ?? .string(valueText)
            let new = try claimFailure {
                ClaimRule(key: key, value: value,
                          condition: try args.value("when").map { try ClaimCondition(text: $0, claim: key) })
            }
            let count = try updateRules(store, appID) { $0.append(new) }
            try CLIAudit.recordAfter(store: store, appID: appID, actor: cliActor(config), action: "claim.add",
                                     target: key, detail: "\(value.jsonText) \(new.condition?.text ?? "always")")
            Output.out("added claim \(key) to \(appID) (\(new.condition?.text ?? "always")); \(count) claim(s) now")
        case "remove":
            guard let key = args.value("key") else { throw UsageError("--key is required") }
            var removed = 0
            let count = try updateRules(store, appID) { rules in
                removed = rules.count { $0.key == key }
                rules.removeAll { $0.key == key }
            }
            guard removed > 0 else { throw CommandFailure(.notFound, "\(appID) has no claim \(key)") }
            try CLIAudit.recordAfter(store: store, appID: appID, actor: cliActor(config), action: "claim.remove",
                                     target: key, detail: "")
            Output.out("removed \(removed) claim(s) \(key) from \(appID); \(count) left")
        default:
            try testClaims(args, store: store, appID: appID)
        }
        return 0
    })

/// The app, its organization and its rules (either stored format).
func loadRules(_ store: Store, _ appID: String) throws -> (app: AppRecord, org: OrgRecord, rules: [ClaimRule]) {
    let (app, org) = try store.read { txn -> (AppRecord?, OrgRecord?) in
        let app = try txn.app(id: appID)
        return (app, try app.flatMap { try txn.org(named: $0.org) })
    }
    guard let app, let org else { throw CommandFailure(.notFound, "no app \(appID) (see 'attestctl app list')") }
    return (app, org, try claimFailure { try CustomClaims.parse(app.customClaimsJSON) })
}

/// Changes the app's rules in one write, checks them against the tier, and stores them in
/// the current format (an app still in the earlier one is migrated here). Returns the count.
func updateRules(_ store: Store, _ appID: String, _ change: (inout [ClaimRule]) throws -> Void) throws -> Int {
    try store.write([.durable]) { txn in
        guard var app = try txn.app(id: appID), let org = try txn.org(named: app.org) else {
            throw CommandFailure(.notFound, "no app \(appID) (see 'attestctl app list')")
        }
        var rules = try claimFailure { try CustomClaims.parse(app.customClaimsJSON) }
        try change(&rules)
        try claimFailure { try CustomClaims.validate(rules, tier: org.tier) }
        app.customClaimsJSON = CustomClaims.encode(rules)
        try txn.put(app)
        return rules.count
    }
}

/// Runs `body`, turning a claim problem into a `CommandFailure` with its message.
func claimFailure<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let e as ServiceError { throw CommandFailure(.failed, e.message) }
}

/// `claims test`: the risk and claims of a stored device or a described profile, with why.
func testClaims(_ args: Arguments, store: Store, appID: String) throws {
    let (app, org, rules) = try loadRules(store, appID)
    let assessment: DeviceAssessment
    var subjectID = ""
    if let key = args.value("device") {
        let device = try findDevice(key, store)
        guard device.appID == appID else {
            throw CommandFailure(.failed, "device \(device.deviceID) belongs to \(device.appID), not \(appID)")
        }
        subjectID = device.subjectID
        assessment = try store.read {
            try DeviceAssessment(device: device, app: app, rules: rules, org: org.name, in: $0, now: now(),
                                 explain: true)
        }
    } else {
        let profile = try claimFailure { try DeviceProfile(profileJSON: args.value("profile") ?? "{}") }
        assessment = DeviceAssessment(profile: profile, app: app, rules: rules, explain: true)
    }
    let risk = assessment.risk
    if args.flag("json") {
        Output.out(JSONValue.object([
            ("riskScore", org.tier == .free ? .null : .int(Int64(risk.score))),
            ("riskCategory", .string(risk.category)),
            ("factors", risk.factorsJSON),
            ("claims", assessment.stepsJSON),
            ("customClaims", .object(assessment.claims)),
            ("subscription", assessment.subscription(subjectID: subjectID, now: now()) ?? .null),
        ]).prettyJSONText)
        return
    }
    Output.out("risk \(risk.score) (\(risk.category))"
               + "\(org.tier == .free ? "; the free tier's tokens carry a null risk_score" : "")")
    for f in risk.factors { Output.out("  +\(f.points)  \(Output.pad(f.signal, 26)) \(f.detail)") }
    if rules.isEmpty { Output.out("no custom claims"); return }
    Output.out("claims, in order:")
    for (i, step) in assessment.steps.enumerated() {
        Output.out("  \(i + 1). \(step.applied ? "applies " : "skipped ") \(step.rule.key) = "
                   + "\(step.rule.value.jsonText)   [\(step.why)]")
    }
    Output.out("custom_claims: \(JSONValue.object(assessment.claims).jsonText)")
}


