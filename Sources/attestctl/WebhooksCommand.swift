import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl webhooks add|list|remove|test|log`: what the management API does, from the shell
/// (any organization; the same checks, the SSRF guard included).
let webhooksCommand = Command(
    name: "webhooks",
    summary: "webhook endpoints: add, list, remove, send a test event, show the delivery log",
    usage: """
        usage: attestctl webhooks add --org NAME URL [--events E1,E2…] [--description TEXT] [--json] [--data DIR]
               attestctl webhooks list [--org NAME] [--json] [--data DIR]
               attestctl webhooks remove ID [--data DIR]
               attestctl webhooks test ID [--data DIR]
               attestctl webhooks log ID [--limit N] [--json] [--data DIR]

        add prints the endpoint's secret (whsec_…) once. Without --events the endpoint gets
        every event. URLs must be https:// and must not point to loopback, private,
        link-local or multicast addresses unless webhooks.allowPrivateDestinations is set
        (an address literal is refused here, a host name by the sender at each connection).
        test queues webhook.test for that endpoint; the delivery worker (attest-webhooks
        deliver, run by 'attestctl serve') sends it. log shows attempts, newest first.

        example: attestctl webhooks add --org acme https://hooks.example.com/attest \
        --events device.new,attestation.anomaly
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["add", "list", "remove", "test", "log"])
        let args = try Arguments(rest, valued: ["data", "org", "events", "description", "limit"],
                                 switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        var admin = WebhookAdmin(store: store, allowPrivate: config.webhookAllowPrivateDestinations,
                                 random: SystemRandom(), now: now())
        admin.quotas = .init(config)
        do {
            switch sub {
            case "add":
                guard let org = args.value("org") else { throw UsageError("--org is required") }
                let url = try args.positional(0, "the endpoint URL")
                let events = args.value("events").map {
                    $0.split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }
                }
                let record = try admin.create(org: org, url: url, events: events,
                                              description: args.value("description"))
                try CLIAudit.recordOrg(store: store, org: org, actor: cliActor(config), action: "webhook.create",
                                       target: record.id, detail: record.url)
                if args.flag("json") {
                    Output.out(WebhooksEndpoint.json(record, secret: true).prettyJSONText)
                } else {
                    Output.out(record.secret)
                    Output.err("webhook endpoint \(record.id) for \(org) → \(record.url); "
                               + "its secret is above: store it now, it is not shown again.")
                }
            case "list":
                let all = try admin.list(org: args.value("org"))
                if args.flag("json") {
                    Output.out(JSONValue.array(all.map { WebhooksEndpoint.json($0) }).prettyJSONText)
                } else if all.isEmpty {
                    Output.out("no webhook endpoints (add one with 'attestctl webhooks add --org NAME URL')")
                } else {
                    Output.out(Output.table(["ID", "ORG", "URL", "EVENTS", "ACTIVE", "CREATED"], all.map {
                        [$0.id, $0.org, $0.url, $0.events.isEmpty ? "all" : $0.events.joined(separator: ","),
                         $0.isActive ? "yes" : "no", $0.createdAt.iso8601]
                    }))
                }
            case "remove":
                let id = try args.positional(0, "endpoint ID (see 'attestctl webhooks list')")
                let owner = try admin.get(org: nil, id: id).org
                try admin.remove(org: nil, id: id)
                try CLIAudit.recordOrg(store: store, org: owner, actor: cliActor(config), action: "webhook.remove",
                                       target: id)
                Output.out("removed webhook endpoint \(id) and its delivery log")
            case "test":
                let id = try args.positional(0, "endpoint ID (see 'attestctl webhooks list')")
                let owner = try admin.get(org: nil, id: id).org
                let event = try admin.test(org: nil, id: id)
                try CLIAudit.recordOrg(store: store, org: owner, actor: cliActor(config), action: "webhook.test",
                                       target: id, detail: event)
                Output.out("queued webhook.test \(event) for \(id)")
            default:
                let id = try args.positional(0, "endpoint ID (see 'attestctl webhooks list')")
                let limit = try args.int("limit", default: 20, in: 1...1000)
                let log = try admin.deliveries(org: nil, id: id, limit: limit)
                if args.flag("json") {
                    Output.out(JSONValue.array(log.map(WebhooksEndpoint.json)).prettyJSONText)
                } else if log.isEmpty {
                    Output.out("no deliveries to \(id) yet")
                } else {
                    var rows = [[String]]()
                    for d in log {
                        let next = d.state == .pending ? d.nextAttemptAt.map { "next " + $0.iso8601 } ?? "" : ""
                        rows.append(["dlv_\(d.sequence)", d.event, d.eventID, d.state.name, String(d.attempts.count),
                                     next])
                        for a in d.attempts {
                            let excerpt = a.excerpt.prefix(60).map { $0.isNewline ? " " : String($0) }.joined()
                            rows.append(["", "  " + a.at.iso8601, a.status == 0 ? "-" : String(a.status),
                                         "\(a.durationMs) ms", a.error.isEmpty ? excerpt : a.error, ""])
                        }
                    }
                    Output.out(Output.table(["DELIVERY", "EVENT / ATTEMPT", "EVENT ID / STATUS", "STATE / TIME",
                                             "ATTEMPTS / ANSWER", "NEXT"], rows))
                }
            }
        } catch let error as ServiceError {
            throw CommandFailure(.failed, error.message)
        }
        return 0
    })
