import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import AttestSupervisor
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl doctor`: checks a deployment and says how to fix each problem.
let doctorCommand = Command(
    name: "doctor",
    summary: "check configuration, keys, store, nginx, pools and clock; list problems with fixes",
    usage: """
        usage: attestctl doctor [--strict] [--json] [--data DIR] [--run DIR]

        Checks: the configuration loads; the challenge secret and signing keys exist with mode
        0600; a key signs now and jwks.json publishes what the key index says; the store opens
        with this build's schema and each map is under 90% full; the rendered nginx
        configuration passes 'nginx -t' and loads nchan (its module installed), nginx answers
        nchan's status on the flag stream's publisher socket, worker_connections leaves room for
        flag streams (a warning under 4096); every pool's socket accepts connections; the clock is
        not behind data already written; test roots trusted (a warning; --strict makes
        warnings count as problems). Exit status: 0 healthy, 1 problems (a numbered list, each
        with its fix), 2 bad usage. The pools' sockets are looked for in --run DIR, else in
        DATA/run ('attestctl serve'), else in /run/attestedge (the systemd units).

        example: attestctl doctor --data /var/lib/attestedge
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "run"], switches: ["strict", "json"])
        let data = dataDirectory(args)
        let report = Doctor(data: data, sockets: args.value("run") ?? Doctor.socketDirectory(data)).run()
        let problems = report.filter { !$0.warning || args.flag("strict") }
        if args.flag("json") {
            Output.out(JSONValue.object([
                ("healthy", .bool(problems.isEmpty)),
                ("findings", .array(report.map {
                    .object([("problem", .string($0.problem)), ("fix", .string($0.fix)),
                             ("warning", .bool($0.warning))])
                })),
            ]).prettyJSONText)
        } else {
            for (i, finding) in report.enumerated() {
                Output.out("\(i + 1). \(finding.warning ? "warning: " : "")\(finding.problem)\n   fix: \(finding.fix)")
            }
            Output.out(problems.isEmpty
                       ? "healthy: \(Doctor.checks) checks passed"
                           + "\(report.isEmpty ? "" : " (\(report.count) warning\(report.count == 1 ? "" : "s"))")"
                       : "\(problems.count) problem\(problems.count == 1 ? "" : "s") found")
        }
        return problems.isEmpty ? 0 : 1
    })

/// The checks of `attestctl doctor`, each adding findings (a problem and its fix).
struct Doctor {
    struct Finding {
        let problem: String
        let fix: String
        var warning = false
    }

    static let checks = 9
    let data: DataDirectory
    /// Where the pools' sockets are.
    let sockets: String

    /// The systemd units' sockets (`RuntimeDirectory=attestedge`).
    static let systemdSockets = "/run/attestedge"

    /// DATA/run when a socket of serve's is there, else /run/attestedge when one of the
    /// units' is, else DATA/run (the finding then names it).
    static func socketDirectory(_ data: DataDirectory) -> String {
        let hasSocket = { (dir: String) in Endpoint.allCases.contains { FileIO.exists(dir + "/\($0.rawValue).sock") } }
        if hasSocket(data.runDirectory) { return data.runDirectory }
        return hasSocket(systemdSockets) ? systemdSockets : data.runDirectory
    }

    func run() -> [Finding] {
        var findings = [Finding]()
        guard data.isInitialised else {
            return [Finding(problem: "\(data.path) is not a data directory (no config.json or secrets/challenge.key)",
                            fix: "create it with 'attestctl init --data \(data.path)', or pass the right --data")]
        }
        let config: Configuration
        do { config = try data.loadConfiguration() } catch {
            return [Finding(problem: "the configuration does not load: \(error)",
                            fix: "correct \(data.configFile) ('attestctl config show' lists every key)")]
        }
        findings += secrets()
        findings += keys(config)
        findings += store(config)
        findings += receipts(config)
        findings += nginx()
        findings += flagStream()
        findings += pools()
        findings += clock(config)
        if !config.testRoots.isEmpty {
            findings.append(Finding(problem: "test roots are trusted (trust.testRoots): software devices pass "
                                        + "attestation (their tokens say attest: test_root), "
                                        + "for every organization's apps: "
                                        + "whoever holds a test root's key gets tokens for any tenant's app",
                                    fix: "remove trust.testRoots on a production deployment", warning: true))
        }
        if config.tokenAudience == .bundle {
            findings.append(Finding(problem: "tokens.audience is \"bundle\": a token's aud is the bundle ID alone, "
                                        + "so a relying party that checks aud but not team_id accepts tokens of "
                                        + "another team's app with the same bundle ID",
                                    fix: "have relying parties accept TEAMID.bundleId as well, then "
                                        + "'attestctl config set tokens.audience appId' (docs/tokens.md)",
                                    warning: true))
        }
        return findings
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
    }

    func secrets() -> [Finding] {
        guard let mode = Self.mode(data.challengeKeyFile), (try? data.challengeSecret()) != nil else {
            return [Finding(problem: "the challenge secret \(data.challengeKeyFile) is missing or not 32 bytes",
                            fix: "restore it from a backup (every host of a deployment shares it); "
                                + "a new one invalidates outstanding challenges")]
        }
        return mode & 0o077 == 0 ? [] : [Finding(problem: "\(data.challengeKeyFile) has mode "
                                                    + "\(String(mode, radix: 8)), readable by others",
                                                 fix: "chmod 600 \(data.challengeKeyFile)")]
    }

    func keys(_ config: Configuration) -> [Finding] {
        let time = now()
        let ring: KeyRing
        do {
            ring = try KeyRing(data)
            try ring.reloadIfChanged()
        } catch {
            return [Finding(problem: "the signing keys do not load: \(error)",
                            fix: "check \(data.keysDirectory)/index.json, "
                                + "or start afresh with 'attestctl keys rotate --now'")]
        }
        var findings = [Finding]()
        if (try? ring.signer(at: time)) == nil {
            findings.append(Finding(problem: "no signing key is active now, or its private key file is missing",
                                    fix: "attestctl keys rotate --now --data \(data.path) "
                                        + "(publish it early next time: keys rotate without --now)"))
        }
        for name in FileIO.list(data.keysDirectory) where name.hasSuffix(".pem") {
            if let mode = Self.mode(data.keysDirectory + "/" + name), mode & 0o077 != 0 {
                findings.append(Finding(problem: "signing key \(name) has mode \(String(mode, radix: 8))",
                                        fix: "chmod 600 \(data.keysDirectory)/\(name)"))
            }
        }
        let expected = Set(ring.publishedEntries(at: time).map(\.kid))
        let served = Set(((try? FileIO.read(data.jwksFile)).flatMap { $0 }
                            .flatMap { try? JSONParser.parse($0) }?["keys"]?.arrayValue ?? [])
            .compactMap { $0["kid"]?.stringValue })
        if expected != served {
            findings.append(Finding(problem: "jwks.json publishes \(served.sorted()) but the key index says "
                                        + "\(expected.sorted())",
                                    fix: "run 'attestctl keys list --data \(data.path)' (it rewrites jwks.json), "
                                        + "or any request to a running pool"))
        }
        return findings
    }

    func store(_ config: Configuration) -> [Finding] {
        let store: Store
        do {
            store = try asDataOwner(data) { try Store(directory: data.storeDirectory, options: config.storeOptions) }
        } catch {
            return [Finding(problem: "the store does not open: \(error)",
                            fix: "restore the last backup ('attestctl restore --from FILE --data DIR')")]
        }
        var findings = [Finding]()
        if store.kind == "postgres" {
            do {
                if let version = try store.sqlSchemaVersion(), version.database != version.build {
                    findings.append(Finding(problem: "the database has schema version \(version.database); "
                                                + "this build writes \(version.build)",
                                            fix: version.database < version.build
                                                ? "attestctl store migrate --data \(data.path)"
                                                : "upgrade attestctl on this host"))
                }
                _ = try store.read { try $0.tenancyGeneration() }
            } catch {
                findings.append(Finding(problem: "the PostgreSQL store does not answer: \(error)",
                                        fix: "check store.postgres.url ('attestctl config show'), that the server runs "
                                            + "and accepts this host (pg_hba.conf), then 'attestctl store migrate'"))
            }
        }
        for usage in store.usage()
        where usage.mapSize > 0 && Double(usage.used) / Double(usage.mapSize) > 0.9 {
            let key = usage.environment == .durable ? "store.durableMapSizeMiB" : "store.ephemeralMapSizeMiB"
            findings.append(Finding(problem: "the \(usage.environment.rawValue) store uses \(usage.used >> 20) MiB "
                                        + "of its \(usage.mapSize >> 20) MiB map",
                                    fix: "raise \(key) ('attestctl config set \(key) N') and restart the pools"))
        }
        return findings
    }

    func nginx() -> [Finding] {
        let conf = data.nginxDirectory + "/nginx.conf"
        // not rendered: serve has not run here (a system nginx installs its own)
        guard FileIO.exists(conf) else { return [] }
        guard let nginx = findProgram("nginx") else {
            return [Finding(problem: "nginx is not installed", fix: "apt-get install nginx")]
        }
        // nginx -t as root acts on the file (load_module runs code, log files are created):
        // never on one another user can write.
        if geteuid() == 0, let writer = Self.otherWriter([data.path, data.nginxDirectory, conf]) {
            return [Finding(problem: "nginx -t not run on \(conf): it (or the directory above it) belongs to uid "
                                + "\(writer), and root does not hand another user's file to nginx "
                                + "(load_module would run its code)",
                            fix: "check it as that user, or render the configuration into a directory "
                                + "only root can write",
                            warning: true)]
        }
        let (status, output) = runCapturing(nginx, ["-t", "-q", "-p", data.runDirectory, "-c", conf, "-e", "/dev/null"])
        return status == 0 ? [] : [Finding(problem: "nginx -t fails on \(conf): "
                                               + "\(output.split(separator: "\n").first.map(String.init) ?? "")",
                                           fix: "re-render it: restart 'attestctl serve' "
                                               + "(or fix the site file the system nginx includes)")]
    }

    /// The first uid other than root that owns one of `paths` (links not followed), or `nil`.
    static func otherWriter(_ paths: [String]) -> uid_t? {
        for path in paths {
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            if st.st_uid != 0 { return st.st_uid }
        }
        return nil
    }

    func pools() -> [Finding] {
        var findings = [Finding]()
        let systemd = sockets == Self.systemdSockets
        for endpoint in Endpoint.allCases {
            let socket = sockets + "/\(endpoint.rawValue).sock"
            if !socketAccepts(socket) {
                let fix = systemd
                    ? "systemctl start attestedge@\(endpoint.rawValue), "
                        + "then see journalctl -u attestedge@\(endpoint.rawValue)"
                    : "start the stack ('attestctl serve --data \(data.path)', or "
                        + "'systemctl start attestedge@\(endpoint.rawValue)'), "
                        + "then see \(data.logDirectory)/attest-\(endpoint.rawValue).log"
                findings.append(Finding(problem: "the \(endpoint.rawValue) pool does not accept on \(socket)",
                                        fix: fix))
            }
        }
        return findings
    }

    func clock(_ config: Configuration) -> [Finding] {
        let time = now()
        var latest = Timestamp(seconds: 0)
        if let store = try? asDataOwner(data, {
            try Store(directory: data.storeDirectory, options: config.storeOptions)
        }) {
            for device in (try? store.read { try $0.devices(limit: 10_000) }) ?? [] {
                latest = max(latest, device.lastSeenAt)
            }
        }
        if latest.seconds > time.seconds + 300 {
            return [Finding(problem: "the clock (\(time.iso8601)) is behind data already written (\(latest.iso8601))",
                            fix: "fix the system time (NTP: timedatectl set-ntp true); used challenges are kept "
                                + "challenge.usedRetentionSeconds past expiry for small steps only")]
        }
        if let apple = try? AppleAppAttestationRoot.certificate(), time < apple.notBefore || time > apple.notAfter {
            return [Finding(problem: "the clock (\(time.iso8601)) is outside Apple's root validity",
                            fix: "fix the system time (timedatectl set-ntp true)")]
        }
        return []
    }
}

/// Whether a unix socket at `path` accepts a connection now.
func socketAccepts(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8.prefix(107))
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
        }
    }
}
