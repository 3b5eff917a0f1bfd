import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl apikey create|list|revoke`.
let apiKeyCommand = Command(
    name: "apikey",
    summary: "organization API keys (aat_…) for the usage and webhook APIs and simulator builds",
    usage: """
        usage: attestctl apikey create --org NAME [--name LABEL] [--scope all|heartbeat] [--data DIR]
               attestctl apikey list [--org NAME] [--json] [--data DIR]
               attestctl apikey revoke ID [--data DIR]

        create prints the key once; only its SHA-256 is stored. ID is the key's first 12
        characters (shown by list). A revoked key answers 401 at once. --scope heartbeat
        makes a key that can only send heartbeats (403 on the usage and webhook APIs): the
        one to build into simulator and CI apps, where anyone can read it. Default: all.

        example: attestctl apikey create --org acme --name "CI builds" --scope heartbeat
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["create", "list", "revoke"])
        let args = try Arguments(rest, valued: ["data", "org", "name", "scope"], switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        switch sub {
        case "create":
            guard let org = args.value("org") else { throw UsageError("--org is required") }
            let name = args.value("name") ?? ""
            guard name.utf8.count <= 100 else { throw UsageError("--name is at most 100 bytes") }
            let scopeName = args.value("scope") ?? APIKeyRecord.Scope.all.name
            guard let scope = APIKeyRecord.Scope(name: scopeName) else {
                throw UsageError("--scope is all or heartbeat, not \"\(scopeName)\"")
            }
            let created = try store.write([.durable]) { txn -> String in
                guard try txn.org(named: org) != nil else {
                    throw CommandFailure(.notFound, "no organization \"\(org)\" (see 'attestctl org list')")
                }
                while true {
                    let (key, record) = APIKeys.generate(org: org, name: name, scope: scope, random: SystemRandom(),
                                                         now: now())
                    // ids are 48 random bits: a clash is retried
                    guard try txn.apiKey(id: record.id) == nil else { continue }
                    try txn.put(record)
                    try OrgAudit.record(cliActor(config), org: org, action: "apikey.create", target: record.id,
                                        detail: "\(name) (scope \(scope.name))", at: now(), in: txn)
                    return key
                }
            }
            if args.flag("json") {
                Output.out(JSONValue.object([("key", .string(created)), ("id", .string(String(created.prefix(12)))),
                                             ("org", .string(org)), ("scope", .string(scope.name))]).prettyJSONText)
            } else {
                Output.out(created)
                Output.err("API key \(created.prefix(12))… for \(org) (scope \(scope.name)): "
                           + "store it now, it is not shown again.")
            }
        case "list":
            let keys = try store.read { try $0.apiKeys() }.filter { k in args.value("org").map { k.org == $0 } ?? true }
            if args.flag("json") {
                Output.out(JSONValue.array(keys.map { k in
                    .object([("id", .string(k.id)), ("org", .string(k.org)), ("name", .string(k.name)),
                             ("scope", .string(k.scope.name)), ("createdAt", .string(k.createdAt.iso8601)),
                             ("revokedAt", k.revokedAt.map { .string($0.iso8601) } ?? .null)])
                }).prettyJSONText)
            } else if keys.isEmpty {
                Output.out("no API keys (create one with 'attestctl apikey create --org NAME')")
            } else {
                Output.out(Output.table(["ID", "ORG", "NAME", "SCOPE", "CREATED", "STATUS"], keys.map {
                    [$0.id + "…", $0.org, $0.name, $0.scope.name, $0.createdAt.iso8601,
                     $0.revokedAt.map { "revoked " + $0.iso8601 } ?? "active"]
                }))
            }
        default:
            let id = String(try args.positional(0, "key ID (see 'attestctl apikey list')").prefix(12))
            try store.write([.durable]) { txn in
                guard var key = try txn.apiKey(id: id) else {
                    throw CommandFailure(.notFound, "no API key \(id) (see 'attestctl apikey list')")
                }
                guard key.revokedAt == nil else { throw CommandFailure(.already, "API key \(id) is already revoked") }
                key.revokedAt = now()
                try txn.put(key)
                try OrgAudit.record(cliActor(config), org: key.org, action: "apikey.revoke", target: id,
                                    detail: key.name, at: now(), in: txn)
            }
            closeFlagStreams([FlagChannel.holder(apiKeyID: id)], data: dataDirectory(args))
            Output.out("revoked API key \(id)")
        }
        return 0
    })
