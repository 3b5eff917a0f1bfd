import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl tickets …`: an app's support tickets, answered and triaged. Every change goes
/// through `FeedbackModeration` (the org API's checks, counters and webhooks).
let ticketsCommand = Command(
    name: "tickets",
    summary: "support tickets: list, show, reply, status, priority",
    usage: """
        usage: attestctl tickets list --app ID [--status S] [--json]
               attestctl tickets show --app ID TICKET [--json]
               attestctl tickets reply --app ID TICKET --body TEXT
               attestctl tickets status --app ID TICKET --status S
               attestctl tickets priority --app ID TICKET --priority P
               (every form takes --data DIR)

        TICKET is the ticket's UUID, in either case. S is one of open awaiting_reply resolved
        closed; P one of low normal high urgent. reply adds a message the opener sees with
        authorType "admin" (1 to 5,000 characters) and sets the ticket awaiting_reply.

        example: attestctl tickets reply --app ABCDE12345.com.example.app \\
                     6F9619FF-8B86-4D01-B42D-00CF4FC964FF --body 'Fixed in 2.1, please update.'
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["list", "show", "reply", "status", "priority"])
        let args = try Arguments(rest, valued: ["data", "app", "status", "priority", "body"], switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        guard let appID = args.value("app") else { throw UsageError("--app TEAMID.BUNDLE is required") }
        let moderation = Moderation(store: store, appID: appID, queueEvents: config.webhookQueueEvents,
                                    audit: .init(actor: cliActor(config), action: "ticket." + sub, args: args))
        func status() throws -> TicketStatus? {
            try Moderation.choice(args, "status", TicketStatus.init(name:), \.name)
        }
        func ticket() throws -> [UInt8] { try moderation.id(args, "ticket") }
        switch sub {
        case "list":
            let s = try status()
            let all = try moderation.read { m, t in try m.tickets(status: s, in: t) }
            if args.flag("json") {
                Output.out(JSONValue.array(all.map { FeedbackAdminWire.ticket($0) }).prettyJSONText)
            } else if all.isEmpty {
                Output.out("no tickets in \(appID)" + (s.map { " with status \($0.name)" } ?? ""))
            } else {
                Output.out(Output.table(["ID", "STATUS", "PRIORITY", "MESSAGES", "UPDATED", "SUBJECT"], all.map {
                    [ReleaseNotes.idText($0.id), $0.status.name, $0.priority.name, String($0.messageCount),
                     $0.updatedAt.iso8601, Moderation.cut($0.subject)]
                }))
            }
        case "show":
            let id = try ticket()
            let (t, messages) = try moderation.read { m, txn in (try m.ticket(id, in: txn), try txn.messages(ticketID: id)) }
            if args.flag("json") {
                Output.out(FeedbackAdminWire.ticket(t, messages: messages).prettyJSONText)
                return 0
            }
            Output.out("""
                \(ReleaseNotes.idText(t.id))  \(t.subject)
                status: \(t.status.name)  priority: \(t.priority.name)  messages: \(t.messageCount)
                submitter: \(t.submitterID.isEmpty ? "-" : t.submitterID)\(t.submitterEmail.map { " <\($0)>" } ?? "")
                created: \(t.createdAt.iso8601)  updated: \(t.updatedAt.iso8601)
                """)
            for m in messages {
                Output.out("\n[\(m.createdAt.iso8601)] \(m.authorType.name):\n\(m.body)")
            }
        case "reply":
            let id = try ticket()
            guard let body = args.value("body") else { throw UsageError("--body TEXT is required") }
            let m = try moderation.write { m, t in try m.reply(id, body: body, in: t) }
            Output.out("admin message \(ReleaseNotes.idText(m.id)) added to ticket \(ReleaseNotes.idText(id)); "
                       + "it is awaiting_reply")
        case "status":
            let id = try ticket()
            guard let s = try status() else { throw UsageError("--status S is required") }
            let (before, after) = try moderation.write { m, t in
                (try m.ticket(id, in: t).status, try m.setTicket(id, status: s, priority: nil, in: t))
            }
            Output.out("ticket \(ReleaseNotes.idText(id)): \(before.name) → \(after.status.name)")
        case "priority":
            let id = try ticket()
            guard let p = try Moderation.choice(args, "priority", TicketPriority.init(name:), \.name) else {
                throw UsageError("--priority P is required")
            }
            let (before, after) = try moderation.write { m, t in
                (try m.ticket(id, in: t).priority, try m.setTicket(id, status: nil, priority: p, in: t))
            }
            Output.out("ticket \(ReleaseNotes.idText(id)): priority \(before.name) → \(after.priority.name)")
        default:
            break
        }
        return 0
    })
