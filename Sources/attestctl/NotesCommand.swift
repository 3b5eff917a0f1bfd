import AttestCore
import AttestService
import AttestStore
import CLISupport

#if canImport(Glibc)
import Glibc
#endif

/// `attestctl notes add|list|remove`: an app's release notes for What's New
/// (`GET /api/v1/whats-new`), with the org API's checks (`FeatureFlagAdmin.addNote`).
let notesCommand = Command(
    name: "notes",
    summary: "release notes for What's New: add, list, remove",
    usage: """
        usage: attestctl notes add --app ID --version V --title T (--body-file F | --body T) [--publish-at DATE]
               attestctl notes list --app ID [--json]
               attestctl notes remove --app ID NOTE-ID
               (every form takes --data DIR)

        A device sees a published note (publish date reached; --publish-at defaults to now, a
        future date schedules it) whose version is above the app version it first attested with
        and at or below the latest version it reported, until it marks the note seen. Versions
        parse like 2.1.0, 1.0 or 2.1.3-beta (at most 64 bytes); one note per version; title 1 to
        200 characters; body (Markdown) at most 20,000 characters; 500 notes per app.

        example: attestctl notes add --app ABCDE12345.com.example.app --version 2.1 --title "Dark mode" \\
                     --body "Settings › Appearance"
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["add", "list", "remove"])
        let args = try Arguments(rest, valued: ["data", "app", "version", "title", "body", "body-file", "publish-at"],
                                 switches: ["json"])
        let (config, store) = try openStore(dataDirectory(args))
        guard let appID = args.value("app") else { throw UsageError("--app TEAMID.BUNDLE is required") }
        let at = now()
        switch sub {
        case "add":
            guard let version = args.value("version"), let title = args.value("title") else {
                throw UsageError("--version and --title are required")
            }
            let body: String
            switch (args.value("body"), args.value("body-file")) {
            case (let b?, nil): body = b
            case (nil, let path?): body = try readBody(path)
            default: throw UsageError("give one of --body TEXT or --body-file FILE")
            }
            let publishAt = try args.value("publish-at").map { text -> Timestamp in
                guard let t = Timestamp(iso8601: text) else {
                    throw UsageError("--publish-at is an ISO 8601 date such as 2026-03-10T12:00:00Z")
                }
                return t
            }
            let note = try claimFailure {
                try FeatureFlagAdmin.write(store: store, appID: appID, org: nil, actor: .cli, now: at,
                                           random: SystemRandom(), queueEvents: config.webhookQueueEvents) { a, t in
                    try CLIAudit(actor: cliActor(config), action: "release_note." + sub, args: args)
                        .record(org: a.app.org, appID: appID, in: t)
                    return try a.addNote(version: version, title: title, body: body, publishAt: publishAt, in: t)
                }
            }
            Output.out(ReleaseNotes.idText(note.id))
            Output.err("release note \(version) for \(appID), "
                       + (note.publishAt <= at ? "published" : "to be published \(note.publishAt.iso8601)"))
        case "list":
            let notes = try claimFailure {
                try store.read { txn in
                    _ = try FeatureFlagAdmin.app(appID, org: nil, in: txn)
                    return try txn.releaseNotes(appID: appID)
                }
            }.sorted { (Versions.compare($0.version, $1.version) ?? 0) > 0 }
            if args.flag("json") {
                Output.out(JSONValue.array(notes.map { ReleaseNotes.json($0, now: at) }).prettyJSONText)
            } else if notes.isEmpty {
                Output.out("no release notes for \(appID) (add one with 'attestctl notes add')")
            } else {
                Output.out(Output.table(["ID", "VERSION", "TITLE", "PUBLISH AT", "STATE"], notes.map {
                    [ReleaseNotes.idText($0.id), $0.version, String($0.title.prefix(40)), $0.publishAt.iso8601,
                     $0.publishAt <= at ? "published" : "scheduled"]
                }))
            }
        default:
            let text = try args.positional(0, "the note's ID (see 'attestctl notes list')")
            guard let id = ReleaseNotes.parseID(text) else {
                throw CommandFailure(.failed, "\(text) is not a note id (a UUID such as 0F8E…-…)")
            }
            try claimFailure {
                try FeatureFlagAdmin.write(store: store, appID: appID, org: nil, actor: .cli, now: at,
                                           random: SystemRandom(), queueEvents: config.webhookQueueEvents) { a, t in
                    try CLIAudit(actor: cliActor(config), action: "release_note." + sub, args: args)
                        .record(org: a.app.org, appID: appID, in: t)
                    return try a.removeNote(id: id, in: t)
                }
            }
            Output.out("removed release note \(ReleaseNotes.idText(id)) from \(appID) (devices' seen marks stay)")
        }
        return 0
    })

/// The body file, at most 80,000 bytes (20,000 characters of up to four bytes).
private func readBody(_ path: String) throws -> String {
    guard let file = fopen(path, "r") else { throw CommandFailure(.failed, "cannot read \(path)") }
    defer { fclose(file) }
    var bytes = [UInt8](repeating: 0, count: 80_001)
    let n = fread(&bytes, 1, bytes.count, file)
    guard n <= 80_000 else { throw CommandFailure(.failed, "\(path) is longer than 80,000 bytes") }
    guard let text = String(validating: bytes[..<n], as: UTF8.self) else {
        throw CommandFailure(.failed, "\(path) is not UTF-8 text")
    }
    return text
}
