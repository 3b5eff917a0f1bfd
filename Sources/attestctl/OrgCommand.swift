import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl org add|set|list|secret`.
let orgCommand = Command(
    name: "org",
    summary: "add, change and list organizations; show or rotate an organization's subject secret",
    usage: """
        usage: attestctl org add NAME [--tier free|pro|business|enterprise] [--mad-limit N]
                                      [--grace-days N] [--upgrade-url URL] [--rate-limit N]
                                      [--subject-links signed|operator|asserted] [--data DIR]
               attestctl org set NAME [--tier T] [--mad-limit N] [--grace-days N] [--upgrade-url URL] [--rate-limit N]
                                      [--subject-links P] [--feedback on|off] [--data DIR]
               attestctl org list [--json] [--data DIR]
               attestctl org secret NAME [--rotate] [--data DIR]

        --mad-limit   monthly active devices (0: unlimited; default by tier: free 100, pro 10000,
                      business 100000, enterprise unlimited)
        --rate-limit  validate+refresh requests per minute for the whole organization (0: unlimited;
                      default by tier: free 600, pro 6000, business 60000, enterprise unlimited)
        set --tier also moves the limits that are at the old tier's defaults to the new tier's;
        limits set by hand stay (and --mad-limit / --rate-limit given with it win).
        --subject-links  which subjectId a device may link itself with: signed (default for new
                      organizations; only values the organization's backend signed with its subject
                      secret), operator (none: 'attestctl subject link' only) or asserted (any id
                      the device sends: any device of the organization gets that subject's
                      entitlements; organizations created before link policies keep it)
        --feedback    whether the organization's apps take feature requests and support tickets
                      from their devices (on by default; off: 403 feedback_not_available)
        secret        prints the organization's subject secret (made if it has none); --rotate
                      replaces it: values signed with the old one stop verifying, links stay

        example: attestctl org add acme --tier pro --mad-limit 5000 --upgrade-url https://example.com/upgrade
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["add", "set", "list", "secret"])
        let args = try Arguments(rest, valued: ["data", "tier", "mad-limit", "grace-days", "upgrade-url", "rate-limit",
                                                "subject-links", "feedback"],
                                 switches: ["json", "rotate"])
        let links = try args.value("subject-links").map { text -> SubjectLinkPolicy in
            guard let policy = SubjectLinkPolicy(rawValue: text) else {
                throw UsageError("--subject-links must be signed, operator or asserted")
            }
            return policy
        }
        let feedback = try args.value("feedback").map { text -> Bool in
            guard text == "on" || text == "off" else { throw UsageError("--feedback must be on or off") }
            return text == "on"
        }
        let (config, store) = try openStore(dataDirectory(args))
        if sub == "list" {
            let orgs = try store.read { try $0.orgs() }
            if args.flag("json") {
                Output.out(JSONValue.array(orgs.map(orgJSON)).prettyJSONText)
            } else if orgs.isEmpty {
                Output.out("no organizations (add one with 'attestctl org add NAME')")
            } else {
                Output.out(Output.table(["NAME", "TIER", "MAD LIMIT", "GRACE", "RATE/MIN", "SUBJECT LINKS",
                                         "UPGRADE URL"], orgs.map {
                    [$0.name, $0.tier.rawValue, $0.madLimit == 0 ? "unlimited" : String($0.madLimit),
                     "\($0.graceDays)d", $0.ratePerMinute == 0 ? "unlimited" : String($0.ratePerMinute),
                     $0.subjectLinks.rawValue, $0.upgradeURL]
                }))
            }
            return 0
        }
        let name = try args.positional(0, "organization NAME")
        if sub == "secret" {
            Output.out(try claimFailure {
                try SubjectLinks.secret(org: name, rotate: args.flag("rotate"), store: store, random: SystemRandom())
            })
            try CLIAudit.recordOrg(store: store, org: name, actor: cliActor(config),
                                   action: args.flag("rotate") ? "org.secret_rotate" : "org.secret_read", target: name)
            return 0
        }
        if sub == "set" {
            var retiered: [FeatureFlagChange] = []
            let changed = try store.write([.durable]) { txn -> OrgRecord in
                guard var org = try txn.org(named: name) else {
                    throw CommandFailure(.notFound, "no organization \"\(name)\" (see 'attestctl org list')")
                }
                if let tier = args.value("tier") {
                    guard let t = Tier(rawValue: tier) else {
                        throw UsageError("--tier must be free, pro, business or enterprise")
                    }
                    // Limits still at the old tier's defaults follow the tier; ones set by hand stay.
                    if org.madLimit == org.tier.defaultMADLimit { org.madLimit = t.defaultMADLimit }
                    if org.ratePerMinute == org.tier.defaultRatePerMinute { org.ratePerMinute = t.defaultRatePerMinute }
                    if t != org.tier { retiered = try touchFeatureFlags(org: name, at: now(), in: txn) }
                    org.tier = t
                }
                if args.value("mad-limit") != nil {
                    org.madLimit = UInt32(try args.int("mad-limit", default: 0, in: 0...Int(UInt32.max)))
                }
                if args.value("grace-days") != nil {
                    org.graceDays = UInt16(try args.int("grace-days", default: 7, in: 0...365))
                }
                if let url = args.value("upgrade-url") { org.upgradeURL = url }
                if args.value("rate-limit") != nil {
                    org.ratePerMinute = UInt32(try args.int("rate-limit", default: 0, in: 0...Int(UInt32.max)))
                }
                if let links {
                    org.subjectLinks = links
                    // An organization from before link policies gets its secret when it first needs one.
                    if links == .signed && org.subjectSecret.isEmpty {
                        org.subjectSecret = SignedSubject.newSecret(random: SystemRandom())
                    }
                }
                if let feedback { org.feedbackEnabled = feedback }
                try txn.put(org)
                return org
            }
            publishFlagChanges(retiered, data: dataDirectory(args), store: store)
            try CLIAudit.recordOrg(store: store, org: name, actor: cliActor(config), action: "org.set", target: name,
                                   detail: ["tier", "mad-limit", "grace-days", "upgrade-url", "rate-limit",
                                            "subject-links", "feedback"]
                                       .compactMap { k in args.value(k).map { "\(k) \($0)" } }
                                       .joined(separator: ", "))
            Output.out("organization \(name): \(changed.tier.rawValue), "
                       + "MAD limit \(changed.madLimit == 0 ? "unlimited" : String(changed.madLimit)), "
                       + "grace \(changed.graceDays)d, "
                       + "rate \(changed.ratePerMinute == 0 ? "unlimited" : "\(changed.ratePerMinute)/min"), "
                       + "subject links \(changed.subjectLinks.rawValue), "
                       + "feedback \(changed.feedbackEnabled ? "on" : "off")")
            return 0
        }
        guard !name.isEmpty, name.count <= 100 else { throw UsageError("NAME must be 1 to 100 characters") }
        let tierName = args.value("tier") ?? "free"
        guard let tier = Tier(rawValue: tierName) else {
            throw UsageError("--tier must be free, pro, business or enterprise")
        }
        let org = OrgRecord(name: name, tier: tier,
                            madLimit: args.value("mad-limit") == nil
                                ? nil : UInt32(try args.int("mad-limit", default: 0, in: 0...Int(UInt32.max))),
                            graceDays: UInt16(try args.int("grace-days", default: 7, in: 0...365)),
                            upgradeURL: args.value("upgrade-url") ?? "",
                            ratePerMinute: args.value("rate-limit") == nil
                                ? nil : UInt32(try args.int("rate-limit", default: 0, in: 0...Int(UInt32.max))),
                            createdAt: now(), subjectLinks: links ?? .signed,
                            subjectSecret: SignedSubject.newSecret(random: SystemRandom()))
        try store.write([.durable]) { txn in
            guard try txn.org(named: name) == nil else {
                throw CommandFailure(.already, "organization \"\(name)\" already exists")
            }
            try txn.put(org)
            try OrgAudit.record(cliActor(config), org: name, action: "org.add", target: name,
                                detail: tier.rawValue, at: now(), in: txn)
        }
        Output.out("added organization \(name) (\(tier.rawValue), "
                   + "MAD limit \(org.madLimit == 0 ? "unlimited" : String(org.madLimit)), "
                   + "subject links \(org.subjectLinks.rawValue))")
        return 0
    })

func orgJSON(_ o: OrgRecord) -> JSONValue {
    ["name": .string(o.name), "tier": .string(o.tier.rawValue), "madLimit": .int(Int64(o.madLimit)),
     "graceDays": .int(Int64(o.graceDays)), "upgradeUrl": .string(o.upgradeURL),
     "ratePerMinute": .int(Int64(o.ratePerMinute)), "subjectLinks": .string(o.subjectLinks.rawValue),
     "feedback": .bool(o.feedbackEnabled), "createdAt": .string(o.createdAt.iso8601)]
}

/// A tier decides which flags, environments and rules are served (`FeatureFlagLimits`), so a
/// tier change is a change to each of the organization's apps' flags: their generation and
/// `changedAt` move in the tier's transaction (workers rebuild; a stream's auth on any host
/// republishes a channel older than that), and the caller publishes every environment.
func touchFeatureFlags(org: String, at now: Timestamp, in txn: Transaction) throws -> [FeatureFlagChange] {
    var changes: [FeatureFlagChange] = []
    for app in try txn.apps() where app.org == org {
        guard var state = try txn.featureFlagApp(appID: app.appID) else { continue }
        state.generation &+= 1
        state.changedAt = now
        try txn.put(state, appID: app.appID)
        changes.append(FeatureFlagChange(appID: app.appID, environment: nil))
    }
    return changes
}
