import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl subject grant|revoke|show|list|link|unlink|sign`: subjects, their entitlements
/// and links, per organization.
let subjectCommand = Command(
    name: "subject",
    summary: "grant and revoke a subject's entitlements; show and list subjects; link devices; sign subject values",
    usage: """
        usage: attestctl subject grant SUBJECT ENTITLEMENT [--until DATE] [--org NAME] [--data DIR]
               attestctl subject revoke SUBJECT ENTITLEMENT [--org NAME] [--data DIR]
               attestctl subject show SUBJECT [--org NAME] [--json] [--data DIR]
               attestctl subject list [--org NAME] [--json] [--data DIR]
               attestctl subject link SUBJECT DEVICE [--org NAME] [--data DIR]
               attestctl subject unlink DEVICE [--org NAME] [--data DIR]
               attestctl subject sign --subject SUBJECT [--ttl 10m] [--org NAME] [--data DIR]

        SUBJECT is the subjectId devices send (a family or household id); subjects are scoped to
        the organization (--org may be left out when there is only one). DATE is
        YYYY-MM-DD (midnight UTC) or YYYY-MM-DDTHH:MM:SSZ; the entitlement drops out of tokens
        from then on. Linked devices carry the entitlements in force in their next token's
        subscription claim.
        link/unlink: DEVICE (a deviceId, or the keyId as sent) of one of the organization's apps;
        the way to link under the organization's subject link policy operator, and allowed under
        any. sign prints a signed subjectId (v1.SUBJECT.EXPIRY.MAC) under the organization's subject
        secret, valid for --ttl (N, Ns, Nm, Nh or Nd; default 10m): what the customer's backend
        makes for policy signed (see docs/tokens.md), here for tests.

        example: attestctl subject grant household-42 premium --until 2027-01-01 --org acme
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["grant", "revoke", "show", "list", "link", "unlink", "sign"])
        let args = try Arguments(rest, valued: ["data", "org", "until", "subject", "ttl"], switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        let org = try organization(args, store)
        let at = now()
        switch sub {
        case "sign":
            let subject = try args.value("subject") ?? args.positional(0, "--subject SUBJECT")
            let ttl = try durationSeconds(args.value("ttl") ?? "10m", option: "--ttl")
            Output.out(try claimFailure {
                try SubjectLinks.sign(org: org, subject: subject, ttl: ttl, store: store, random: SystemRandom(),
                                      now: at)
            })
        case "link", "unlink":
            let subject = sub == "link" ? try args.positional(0, "SUBJECT") : ""
            let device = try findDevice(try args.positional(sub == "link" ? 1 : 0, "DEVICE (deviceId or keyId)"), store)
            _ = try claimFailure {
                try SubjectLinks.link(keyID: device.keyID, to: subject, org: org, store: store, now: at)
            }
            try CLIAudit.recordOrg(store: store, org: org, actor: cliActor(config), action: "subject." + sub,
                                   target: subject.isEmpty ? OrgDeviceWire.keyID(device.keyID) : subject,
                                   detail: OrgDeviceWire.keyID(device.keyID))
            Output.out(sub == "link" ? "linked device \(device.deviceID) (\(device.appID)) to \(subject) (\(org))"
                                     : "unlinked device \(device.deviceID) (\(device.appID)) (\(org))")
        case "grant", "revoke":
            let subject = try args.positional(0, "SUBJECT"), entitlement = try args.positional(1, "ENTITLEMENT")
            if sub == "grant" {
                let until = try args.value("until").map { text -> Timestamp in
                    guard let t = Timestamp(iso8601: text) ?? Timestamp(iso8601: text + "T00:00:00Z") else {
                        throw UsageError("--until must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, got \(text)")
                    }
                    return t
                }
                _ = try claimFailure {
                    try SubjectGrants.grant(org: org, subjectID: subject, entitlement: entitlement, until: until,
                                            store: store, now: at)
                }
                try CLIAudit.recordOrg(store: store, org: org, actor: cliActor(config), action: "subject.grant",
                                       target: subject, detail: entitlement + (until.map { " until \($0.iso8601)" } ?? ""))
                Output.out("granted \(entitlement) to \(subject) (\(org))\(until.map { " until \($0.iso8601)" } ?? "")")
            } else {
                _ = try claimFailure {
                    try SubjectGrants.revoke(org: org, subjectID: subject, entitlement: entitlement, store: store)
                }
                try CLIAudit.recordOrg(store: store, org: org, actor: cliActor(config), action: "subject.revoke",
                                       target: subject, detail: entitlement)
                Output.out("revoked \(entitlement) from \(subject) (\(org))")
            }
        case "show":
            let id = try args.positional(0, "SUBJECT")
            let (record, devices) = try store.read { txn -> (SubjectRecord?, [DeviceRecord]) in
                (try txn.subject(org: org, subjectID: id),
                 try txn.subjectDevices(org: org, subjectID: id).compactMap { try txn.device(keyID: $0) })
            }
            guard let record else { throw CommandFailure(.notFound, "no subject \(id) in \(org)") }
            let json = subjectJSON(record, devices: devices, at: at)
            if args.flag("json") { Output.out(json.prettyJSONText); return 0 }
            Output.out("subject \(id) (\(org)), since \(record.createdAt.iso8601)")
            Output.out(record.entitlements.isEmpty ? "no entitlements"
                       : Output.table(["ENTITLEMENT", "GRANTED", "UNTIL", "IN FORCE"], record.entitlements.map {
                [$0.name, $0.grantedAt.iso8601, $0.until?.iso8601 ?? "-", $0.isActive(at: at) ? "yes" : "no"]
            }))
            Output.out(devices.isEmpty ? "no linked devices"
                       : Output.table(["DEVICE ID", "APP ID", "STATUS", "LAST SEEN"], devices.map {
                [$0.deviceID, $0.appID, $0.status.name, $0.lastSeenAt.iso8601]
            }))
        default:
            let rows = try store.read { txn in
                try txn.subjects(org: org).map { ($0, try txn.subjectDevices(org: org, subjectID: $0.subjectID).count) }
            }
            if args.flag("json") {
                Output.out(JSONValue.array(rows.map { subject, n in
                    .object([("subjectId", .string(subject.subjectID)),
                             ("entitlements", .array(subject.active(at: at).map { .string($0.name) })),
                             ("devices", .int(Int64(n))), ("createdAt", .string(subject.createdAt.iso8601))])
                }).prettyJSONText)
            } else {
                Output.out(rows.isEmpty ? "no subjects in \(org)"
                           : Output.table(["SUBJECT", "ENTITLEMENTS IN FORCE", "DEVICES"], rows.map { s, n in
                    [s.subjectID, s.active(at: at).map(\.name).joined(separator: ",").ifEmpty("-"), String(n)]
                }))
            }
        }
        return 0
    })

/// A duration: N seconds, or N followed by s, m, h or d.
func durationSeconds(_ text: String, option: String) throws -> Int64 {
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
    let unit = text.last.flatMap { units[$0] }
    guard let n = Int64(unit == nil ? text : String(text.dropLast())), n > 0, n <= 3_650 * 86_400 / (unit ?? 1) else {
        throw UsageError("\(option) must be N, Ns, Nm, Nh or Nd (N above 0), got \"\(text)\"")
    }
    return n * (unit ?? 1)
}

/// `--org NAME`, or the only organization there is.
func organization(_ args: Arguments, _ store: Store) throws -> String {
    let orgs = try store.read { try $0.orgs() }
    if let name = args.value("org") {
        guard orgs.contains(where: { $0.name == name }) else {
            throw CommandFailure(.notFound, "no organization \"\(name)\"")
        }
        return name
    }
    guard orgs.count == 1 else { throw UsageError("--org NAME is required (\(orgs.count) organizations)") }
    return orgs[0].name
}

func subjectJSON(_ s: SubjectRecord, devices: [DeviceRecord], at: Timestamp) -> JSONValue {
    .object([
        ("subjectId", .string(s.subjectID)), ("createdAt", .string(s.createdAt.iso8601)),
        ("entitlements", .array(s.entitlements.map {
            .object([("name", .string($0.name)), ("grantedAt", .string($0.grantedAt.iso8601)),
                     ("until", $0.until.map { .string($0.iso8601) } ?? .null), ("active", .bool($0.isActive(at: at)))])
        })),
        ("devices", .array(devices.map {
            .object([("deviceId", .string($0.deviceID)), ("appId", .string($0.appID)),
                     ("status", .string($0.status.name))])
        })),
    ])
}

extension String {
    func ifEmpty(_ other: String) -> String { isEmpty ? other : self }
}
