import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl console login|sessions|logout`: sign-in links for the operator console and the
/// sessions they became (docs/console.md).
let consoleCommand = Command(
    name: "console",
    summary: "one-time sign-in links to the operator console, its sessions",
    usage: """
        usage: attestctl console login --org NAME [--role admin|editor|viewer] [--name WHO]
                                       [--minutes N] [--url BASE] [--data DIR]
               attestctl console sessions [--org NAME] [--json] [--data DIR]
               attestctl console logout ID | --org NAME --all [--data DIR]

        login prints a link that signs one browser in to NAME's console, once, within
        console.loginMinutes (default 15) minutes; the session lasts console.sessionHours
        (default 8). Roles: viewer reads; editor also changes flags, release notes, feature
        requests and tickets; admin also API keys, webhooks and devices (default: viewer).
        --name says who the link is for: the audit log shows it with every change. --url is
        where people reach this server (default console.url, else server.listen).
        sessions lists live sessions and unused links; logout ends a session (ID from
        sessions), or all of an organization's sessions and its unused links (--all).

        example: attestctl console login --org acme --role editor --name "Sam (support)"
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["login", "sessions", "logout"])
        let args = try Arguments(rest, valued: ["data", "org", "role", "name", "minutes", "url"],
                                 switches: ["json", "all"])
        let (config, store) = try openStore(dataDirectory(args))
        switch sub {
        case "login":
            guard let org = args.value("org") else { throw UsageError("--org is required") }
            let roleName = args.value("role") ?? OrgRole.viewer.name
            guard let role = OrgRole(name: roleName) else {
                throw UsageError("--role is admin, editor or viewer, not \"\(roleName)\"")
            }
            var minutes = config.consoleLoginMinutes
            if let m = args.value("minutes") {
                guard let n = Int(m), (1...1440).contains(n) else { throw UsageError("--minutes is 1 to 1440") }
                minutes = n
            }
            let base = try consoleBase(args.value("url") ?? config.consoleURL, listen: config.listen)
            let name = args.value("name") ?? invokingUser
            let token: String
            do {
                token = try ConsoleSignIn.makeLink(org: org, role: role, name: name, minutes: minutes, store: store,
                                                   random: SystemRandom(), now: now(), by: cliActor(config))
            } catch let e as ServiceError where e.code == .notFound {
                throw CommandFailure(.notFound, "no organization \"\(org)\" (see 'attestctl org list')")
            } catch let e as ServiceError {
                throw UsageError(e.message)
            }
            Output.out(base + "/console/login.html#" + token)
            Output.err("One-time sign-in link for \(org) as \(role.name) (\(name)), usable once within \(minutes) min.")
        case "sessions":
            let at = now()
            let org = args.value("org")
            let sessions = try store.read { try $0.consoleSessions() }
                .filter { $0.isLive(at: at) && (org == nil || $0.org == org) }
            let links = try store.read { try $0.consoleLogins() }
                .filter { at < $0.login.expiresAt && (org == nil || $0.login.org == org) }
            if args.flag("json") {
                Output.out(JSONValue.object([
                    ("sessions", .array(sessions.map { s in
                        .object([("id", .string(s.idHex)), ("org", .string(s.org)), ("role", .string(s.role.name)),
                                 ("name", .string(s.name)), ("createdAt", .string(s.createdAt.iso8601)),
                                 ("expiresAt", .string(s.expiresAt.iso8601))])
                    })),
                    ("unusedLinks", .array(links.map { l in
                        .object([("org", .string(l.login.org)), ("role", .string(l.login.role.name)),
                                 ("name", .string(l.login.name)), ("expiresAt", .string(l.login.expiresAt.iso8601))])
                    })),
                ]).prettyJSONText)
                return 0
            }
            if sessions.isEmpty {
                Output.out("no live console sessions")
            } else {
                Output.out(Output.table(["ID", "ORG", "ROLE", "NAME", "SIGNED IN", "EXPIRES"], sessions.map {
                    [$0.idHex, $0.org, $0.role.name, $0.name, $0.createdAt.iso8601, $0.expiresAt.iso8601]
                }))
            }
            if !links.isEmpty {
                Output.out("\n\(links.count) unused sign-in link(s): "
                           + links.map { "\($0.login.org)/\($0.login.role.name) for \($0.login.name)" }
                                .joined(separator: ", "))
            }
        default:
            let at = now()
            if args.flag("all") {
                guard let org = args.value("org") else { throw UsageError("--all needs --org NAME") }
                let live = try store.read { try $0.consoleSessions() }.filter { $0.org == org && $0.isLive(at: at) }
                for s in live {
                    try ConsoleSignIn.end(idHex: s.idHex, org: org, store: store, now: at, by: cliActor(config))
                }
                let voided = try ConsoleSignIn.voidLinks(org: org, store: store, now: at, by: cliActor(config))
                Output.out("ended \(live.count) console session(s) of \(org) "
                           + "and voided \(voided) unused sign-in link(s)")
                return 0
            }
            let id = try args.positional(0, "session ID (see 'attestctl console sessions')")
            do {
                guard try ConsoleSignIn.end(idHex: id, store: store, now: at, by: cliActor(config)) else {
                    throw CommandFailure(.notFound, "no live console session \(id) (see 'attestctl console sessions')")
                }
            } catch let e as ServiceError {
                throw UsageError(e.message)
            }
            Output.out("ended console session \(id)")
        }
        return 0
    })

/// The start of a sign-in link: `configured` (console.url or --url) when given, else
/// http://<server.listen> (a wildcard host as 127.0.0.1).
func consoleBase(_ configured: String, listen: String) throws -> String {
    if !configured.isEmpty {
        guard configured.hasPrefix("https://") || configured.hasPrefix("http://"),
              !configured.contains(where: { $0 == " " || $0 == "#" || $0 == "?" }) else {
            throw UsageError("the console's URL must be http(s)://HOST[:PORT][/PATH], not \"\(configured)\"")
        }
        return configured.hasSuffix("/") ? String(configured.dropLast()) : configured
    }
    var host = String(listen.split(separator: " ").first ?? "127.0.0.1:8080")
    for wildcard in ["*:", "0.0.0.0:", "[::]:"] where host.hasPrefix(wildcard) {
        host = "127.0.0.1:" + host.dropFirst(wildcard.count)
    }
    return "http://" + host
}

/// The Unix user running attestctl, as the audit log names it: the account of the real uid
/// (not $USER, which the caller sets), and under sudo the account sudo says ran it.
func cliUser() -> String {
    let uid = getuid()
    let name = getpwuid(uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(uid)"
    if uid == 0, let sudo = getenv("SUDO_USER").map({ String(cString: $0) }), !sudo.isEmpty {
        return "\(name) via sudo by \(sudo)"
    }
    return name
}

/// Who started attestctl, read once before it takes on the data directory owner's uid
/// (main.swift touches it first: `actAsDataOwner` would make every change the owner's).
let invokingUser = cliUser()

/// attestctl as the audit log's actor.
func cliActor(_ config: Configuration) -> AuditActor {
    AuditActor(kind: .cli, id: invokingUser, name: "attestctl", role: nil, config)
}
