import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl audit --org NAME`: the organization's audit log, newest first (docs/console.md).
let auditCommand = Command(
    name: "audit",
    summary: "an organization's audit log: who changed what, when, through what",
    usage: """
        usage: attestctl audit --org NAME [--limit N] [--before CURSOR] [--json] [--data DIR]

        Newest first, N entries (default 50, at most 500). Each change made through the org API,
        the console or attestctl is recorded with who made it: an API key (its id), a console
        session (its id, the name its link was made for, its role) or attestctl (the Unix user).
        --before pages on from an entry's cursor (shown with --json).

        example: attestctl audit --org acme --limit 20
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "org", "limit", "before"], switches: ["json"])
        guard let org = args.value("org") else { throw UsageError("--org is required") }
        var limit = 50
        if let l = args.value("limit") {
            guard let n = Int(l), (1...500).contains(n) else { throw UsageError("--limit is 1 to 500") }
            limit = n
        }
        let before = try args.value("before").map { text -> (at: Int64, sequence: UInt64) in
            guard let c = OrgAudit.cursor(text) else {
                throw UsageError("--before takes an entry's cursor (<at>.<sequence>)")
            }
            return c
        }
        let (_, store) = try openStore(dataDirectory(args))
        let entries = try store.read { txn -> [AuditRecord] in
            guard try txn.org(named: org) != nil else {
                throw CommandFailure(.notFound, "no organization \"\(org)\" (see 'attestctl org list')")
            }
            return try txn.auditEntries(org: org, before: before, limit: limit)
        }
        if args.flag("json") {
            Output.out(JSONValue.array(entries.map(OrgAudit.json)).prettyJSONText)
        } else if entries.isEmpty {
            Output.out("no audit entries for \(org)")
        } else {
            Output.out(Output.table(["WHEN", "WHO", "ACTION", "TARGET", "DETAIL"], entries.map { e in
                let who: String
                switch e.actor {
                case .cli: who = "attestctl (\(e.actorID))"
                case .apiKey: who = "key \(e.actorID)…" + (e.actorName.isEmpty ? "" : " \(e.actorName)")
                case .session: who = "\(e.actorName) (\(e.role?.name ?? "?"), session \(e.actorID.prefix(8)))"
                }
                return [e.at.iso8601, who, e.action, e.target, String(e.detail.prefix(60))]
            }))
        }
        return 0
    })
