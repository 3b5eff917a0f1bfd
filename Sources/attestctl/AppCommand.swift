import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl app add|list|set`.
let appCommand = Command(
    name: "app",
    summary: "register, list and tune apps (App ID = TEAMID.bundleId)",
    usage: """
        usage: attestctl app add --org NAME --team TEAMID --bundle BUNDLE_ID
                                 [--env production|development|both] [--token-lifetime SECONDS]
                                 [--claims JSON] [--min-app-version V] [--min-os-version V] [--data DIR]
               attestctl app list [--json] [--data DIR]
               attestctl app set --app APPID [--apple-risk-metric-threshold N] [--apple-risk-metric-points P]
                                 [--data DIR]

        --env      which App Attest environments the app accepts (default production)
        --claims   custom claims, a JSON array (docs/tokens.md, "Custom claims"; 'attestctl claims' edits
                   them one at a time), e.g. '[{"key":"user_tier","value":"premium"}]'

        --apple-risk-metric-threshold N   the risk signal apple_risk_metric adds its points when Apple's
                   risk metric for the device (keys attested for the app on it in 30 days) is above N;
                   0 (the default) turns it off: tune N to the values your devices show
                   (attestctl device show); --apple-risk-metric-points P (0-100, default 25)

        example: attestctl app add --org acme --team ABCDE12345 --bundle com.example.app --env both
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["add", "list", "set"])
        let args = try Arguments(rest, valued: ["data", "org", "team", "bundle", "env", "token-lifetime", "claims",
                                                "min-app-version", "min-os-version", "app",
                                                "apple-risk-metric-threshold", "apple-risk-metric-points"],
                                 switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        if sub == "set" { return try setApp(args, store, config) }
        if sub == "list" {
            let apps = try store.read { try $0.apps() }
            if args.flag("json") {
                Output.out(JSONValue.array(apps.map(appJSON)).prettyJSONText)
            } else if apps.isEmpty {
                Output.out("no apps (register one with "
                           + "'attestctl app add --org NAME --team TEAMID --bundle BUNDLE_ID')")
            } else {
                Output.out(Output.table(["APP ID", "ORG", "ENV", "ENABLED", "TOKEN LIFETIME"], apps.map {
                    [$0.appID, $0.org, $0.policy.rawValue, $0.enabled ? "yes" : "no",
                     $0.tokenLifetimeSeconds == 0 ? "default" : "\($0.tokenLifetimeSeconds)s"]
                }))
            }
            return 0
        }
        guard let orgName = args.value("org") else { throw UsageError("--org is required") }
        guard let team = args.value("team"), AppIdentifier.isValidTeamID(team) else {
            throw UsageError("--team must be the 10-character Apple Developer Team ID (A-Z, 0-9)")
        }
        guard let bundle = args.value("bundle"), AppIdentifier.isValidBundleID(bundle) else {
            throw UsageError("--bundle must be a bundle identifier of at most \(AppIdentifier.bundleIDMaxLength) "
                             + "letters, digits, '.' and '-'")
        }
        guard let policy = EnvironmentPolicy(rawValue: args.value("env") ?? "production") else {
            throw UsageError("--env must be production, development or both")
        }
        let claims = args.value("claims") ?? ""
        let lifetime = try args.int("token-lifetime", default: 0, in: 0...2_592_000)
        guard lifetime == 0 || lifetime >= Configuration.minimumTokenLifetimeSeconds else {
            throw UsageError("--token-lifetime must be 0 (the deployment default) or at least "
                             + "\(Configuration.minimumTokenLifetimeSeconds) seconds: the iOS SDK treats a token as "
                             + "expired 300 s before its expiresAt, so shorter lifetimes make every call re-attest")
        }
        var app = AppRecord(teamID: team, bundleID: bundle, org: orgName, policy: policy,
                            tokenLifetimeSeconds: UInt32(lifetime),
                            customClaimsJSON: claims, minAppVersion: args.value("min-app-version") ?? "",
                            minOSVersion: args.value("min-os-version") ?? "", createdAt: now())
        try applyRiskMetricPolicy(args, to: &app)
        try store.write([.durable]) { txn in
            guard let org = try txn.org(named: orgName) else {
                throw CommandFailure(.notFound,
                                     "no organization \"\(orgName)\" (add it with 'attestctl org add \(orgName)')")
            }
            let rules = try claimFailure { () throws(ServiceError) -> [ClaimRule] in
                let rules = try CustomClaims.parse(claims)
                try CustomClaims.validate(rules, tier: org.tier)
                return rules
            }
            guard try txn.app(id: app.appID) == nil else {
                throw CommandFailure(.already, "app \(app.appID) is already registered")
            }
            var stored = app
            stored.customClaimsJSON = CustomClaims.encode(rules)
            try txn.put(stored)
            try OrgAudit.record(cliActor(config), org: orgName, action: "app.add", target: app.appID,
                                detail: "environment \(policy.rawValue)", at: now(), in: txn)
        }
        Output.out("registered app \(app.appID) for \(orgName) (environment \(policy.rawValue))")
        return 0
    })

func appJSON(_ a: AppRecord) -> JSONValue {
    ["appId": .string(a.appID), "teamId": .string(a.teamID), "bundleId": .string(a.bundleID), "org": .string(a.org),
     "environment": .string(a.policy.rawValue), "enabled": .bool(a.enabled),
     "tokenLifetimeSeconds": .int(Int64(a.tokenLifetimeSeconds)),
     "customClaims": ((try? CustomClaims.parse(a.customClaimsJSON)).map { .array($0.map(\.json)) }) ?? .null,
     "minAppVersion": .string(a.minAppVersion), "minOSVersion": .string(a.minOSVersion),
     "appleRiskMetricThreshold": .int(Int64(a.appleRiskMetricThreshold)),
     "appleRiskMetricPoints": .int(Int64(a.appleRiskMetricPoints)),
     "createdAt": .string(a.createdAt.iso8601)]
}

/// `--apple-risk-metric-threshold` and `--apple-risk-metric-points`, when given.
func applyRiskMetricPolicy(_ args: Arguments, to app: inout AppRecord) throws {
    if args.value("apple-risk-metric-threshold") != nil {
        app.appleRiskMetricThreshold = UInt32(try args.int("apple-risk-metric-threshold", default: 0,
                                                           in: 0...1_000_000))
    }
    if args.value("apple-risk-metric-points") != nil {
        app.appleRiskMetricPoints = UInt8(try args.int("apple-risk-metric-points", default: 25, in: 0...100))
    }
}

/// `attestctl app set`: changes an app's risk metric policy (the next token of each device uses it).
func setApp(_ args: Arguments, _ store: Store, _ config: Configuration) throws -> Int32 {
    guard let appID = args.value("app") else { throw UsageError("--app TEAMID.BUNDLE_ID is required") }
    guard args.value("apple-risk-metric-threshold") != nil || args.value("apple-risk-metric-points") != nil else {
        throw UsageError("say what to set: --apple-risk-metric-threshold N and/or --apple-risk-metric-points P")
    }
    let app = try store.write([.durable]) { txn -> AppRecord in
        guard var app = try txn.app(id: appID) else {
            throw CommandFailure(.notFound, "no app \(appID) (list them with 'attestctl app list')")
        }
        try applyRiskMetricPolicy(args, to: &app)
        try txn.put(app)
        try OrgAudit.record(cliActor(config), org: app.org, action: "app.set", target: appID,
                            detail: "apple risk metric threshold \(app.appleRiskMetricThreshold), "
                                + "points \(app.appleRiskMetricPoints)", at: now(), in: txn)
        return app
    }
    Output.out("app \(app.appID): apple_risk_metric "
               + (app.appleRiskMetricThreshold == 0
                  ? "off (threshold 0)"
                  : "+\(app.appleRiskMetricPoints) when Apple's risk metric is above \(app.appleRiskMetricThreshold)"))
    return 0
}
