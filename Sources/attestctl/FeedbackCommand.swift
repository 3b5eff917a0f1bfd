import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl feedback …`: an app's feature requests, moderated. Every change goes through
/// `FeedbackModeration` (the org API's checks, counters and webhooks).
let feedbackCommand = Command(
    name: "feedback",
    summary: "feature requests: list, show, status, reply, merge",
    usage: """
        usage: attestctl feedback list --app ID [--status S] [--json]
               attestctl feedback show --app ID REQUEST [--json]
               attestctl feedback status --app ID REQUEST --status S
               attestctl feedback reply --app ID REQUEST --body TEXT
               attestctl feedback merge --app ID REQUEST --into REQUEST2
               (every form takes --data DIR)

        REQUEST is the request's UUID, in either case. S is one of pending open planned
        in_progress shipped declined duplicate. reply adds a comment the devices see with
        authorType "admin" (1 to 2,000 characters). merge makes REQUEST a duplicate of REQUEST2
        and moves its votes there; an author who voted for both is counted once.

        example: attestctl feedback status --app ABCDE12345.com.example.app \\
                     6F9619FF-8B86-4D01-B42D-00CF4FC964FF --status planned
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["list", "show", "status", "reply", "merge"])
        let args = try Arguments(rest, valued: ["data", "app", "status", "body", "into"], switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        guard let appID = args.value("app") else { throw UsageError("--app TEAMID.BUNDLE is required") }
        let moderation = Moderation(store: store, appID: appID, queueEvents: config.webhookQueueEvents,
                                    audit: .init(actor: cliActor(config), action: "feedback." + sub, args: args))
        func status() throws -> FeatureRequestStatus? {
            try Moderation.choice(args, "status", FeatureRequestStatus.init(name:), \.name)
        }
        func request() throws -> [UInt8] { try moderation.id(args, "feature request") }
        switch sub {
        case "list":
            let s = try status()
            let all = try moderation.read { m, t in try m.requests(status: s, in: t) }
            if args.flag("json") {
                Output.out(JSONValue.array(all.map { FeedbackAdminWire.request($0) }).prettyJSONText)
            } else if all.isEmpty {
                Output.out("no feature requests in \(appID)" + (s.map { " with status \($0.name)" } ?? ""))
            } else {
                Output.out(Output.table(["ID", "STATUS", "VOTES", "COMMENTS", "CREATED", "TITLE"], all.map {
                    [ReleaseNotes.idText($0.id), $0.status.name, String($0.voteCount), String($0.commentCount),
                     $0.createdAt.iso8601, Moderation.cut($0.title)]
                }))
            }
        case "show":
            let id = try request()
            let (r, comments) = try moderation.read { m, t in (try m.request(id, in: t), try t.comments(requestID: id)) }
            if args.flag("json") {
                Output.out(FeedbackAdminWire.request(r, comments: comments).prettyJSONText)
                return 0
            }
            Output.out("""
                \(ReleaseNotes.idText(r.id))  \(r.title)
                status: \(r.status.name)\(r.mergedInto.map { " (merged into \(ReleaseNotes.idText($0)))" } ?? "")
                votes: \(r.voteCount)  comments: \(r.commentCount)
                submitter: \(r.submitterID.isEmpty ? "-" : r.submitterID)
                created: \(r.createdAt.iso8601)  updated: \(r.updatedAt.iso8601)

                \(r.description)
                """)
            if !comments.isEmpty {
                Output.out("")
                Output.out(Output.table(["CREATED", "AUTHOR", "BODY"], comments.map {
                    [$0.createdAt.iso8601, $0.authorType.name, Moderation.cut($0.body)]
                }))
            }
        case "status":
            let id = try request()
            guard let s = try status() else { throw UsageError("--status S is required") }
            let (before, after) = try moderation.write { m, t in
                (try m.request(id, in: t).status, try m.setStatus(id, s, in: t))
            }
            Output.out("feature request \(ReleaseNotes.idText(id)): \(before.name) → \(after.status.name)")
        case "reply":
            let id = try request()
            guard let body = args.value("body") else { throw UsageError("--body TEXT is required") }
            let c = try moderation.write { m, t in try m.comment(id, body: body, in: t) }
            Output.out("admin comment \(ReleaseNotes.idText(c.id)) added to feature request \(ReleaseNotes.idText(id))")
        case "merge":
            let id = try request()
            guard let intoText = args.value("into") else { throw UsageError("--into REQUEST2 is required") }
            let into = try moderation.failure { try FeedbackModeration.id(intoText, "feature request") }
            let target = try moderation.write { m, t in
                _ = try m.merge(id, into: into, in: t)
                return try m.request(into, in: t)
            }
            Output.out("feature request \(ReleaseNotes.idText(id)) merged into \(ReleaseNotes.idText(into)) "
                       + "(now \(target.voteCount) votes)")
        default:
            break
        }
        return 0
    })

/// What `attestctl feedback` and `attestctl tickets` share: the app's moderator in a read or
/// a durable write, the id positional, and the org API's refusals as command failures (404 is
/// `not_found`; both exit 1 with the message).
struct Moderation {
    let store: Store
    let appID: String
    let queueEvents: Bool
    /// What a write records in the organization's audit log.
    let audit: CLIAudit

    /// The option `--name` as one of an enum's names, nil when absent; a usage error listing
    /// the names otherwise.
    static func choice<T: CaseIterable>(_ args: Arguments, _ name: String, _ make: (String) -> T?,
                                        _ text: (T) -> String) throws -> T? {
        try args.value(name).map { given in
            guard let value = make(given) else {
                throw UsageError("--\(name) is one of " + T.allCases.map(text).joined(separator: ", "))
            }
            return value
        }
    }

    func failure<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as ServiceError {
            throw CommandFailure(e.code == .notFound ? .notFound : .failed, e.message)
        }
    }

    func read<T>(_ body: (FeedbackModeration, Transaction) throws -> T) throws -> T {
        try failure { try FeedbackModeration.read(store: store, appID: appID, org: nil, now: now(), body) }
    }

    func write<T>(_ body: (FeedbackModeration, Transaction) throws -> T) throws -> T {
        try failure {
            try FeedbackModeration.write(store: store, appID: appID, org: nil, actor: .cli, now: now(),
                                         random: SystemRandom(), queueEvents: queueEvents) { m, t in
                let done = try body(m, t)
                try audit.record(org: m.app.org, appID: appID, in: t)
                return done
            }
        }
    }

    /// The first positional as an id (a usage error when missing, not found when not a UUID).
    func id(_ args: Arguments, _ what: String) throws -> [UInt8] {
        let text = try args.positional(0, "the \(what)'s ID")
        return try failure { try FeedbackModeration.id(text, what) }
    }

    /// One line of at most 60 characters, for a table cell.
    static func cut(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 60 || line.count < text.count ? String(line.prefix(59)) + "…" : line
    }
}
