import AttestCore
import AttestService
import AttestStore
import CLISupport
import HTTPClient
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl serve`: the whole stack on this machine, in the foreground.
let serveCommand = Command(
    name: "serve",
    summary: "run the whole stack in the foreground: nginx plus one pool per endpoint",
    usage: """
        usage: attestctl serve [--data DIR] [--listen HOST:PORT] [--workers N] [--trust-root PEM]...
                               [--test-ca] [--nginx-templates DIR]

        Initialises DIR if needed (with a demo organization and app, printed), renders the nginx
        configuration into DIR/nginx, starts one pre-forked pool per endpoint and nginx, waits
        until each answers and prints the base URL. Ctrl-C or SIGTERM stops everything it started.

        --listen      address nginx listens on (default server.listen, 127.0.0.1:8080)
        --workers     worker processes per pool (default server.workers)
        --trust-root  also trust this CA (PEM) for attestations: test devices only, logged loudly
        --test-ca     create a test CA in DIR/test-ca if missing and trust it (trust.testRoots), so
                      'attest-device --test-ca DIR/test-ca/ca.pem' can enroll (never in production)
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "listen", "workers", "trust-root", "nginx-templates"], switches: ["test-ca"])
        return try Serve(args).run()
    })

struct Serve {
    let args: Arguments
    let data: DataDirectory

    init(_ args: Arguments) {
        self.args = args
        data = dataDirectory(args)
    }

    static let endpoints: [Endpoint] = [.challenge, .validate, .refresh]
    /// Pools site.conf routes to that later capabilities add (heartbeat and usage, webhooks):
    /// while their executables are absent their locations answer 501 JSON.
    static let optionalPools = ["mad", "webhooks"]

    func run() throws -> Int32 {
        if !data.isInitialised {
            _ = try initialiseDataDirectory(data)
            try createDemoTenant()
        }
        let trustRoots = args.values("trust-root").map(FileIO.absolute)
        if args.flag("test-ca") { try ensureTestCA(data) }
        var config = try data.loadConfiguration()
        if let listen = args.value("listen") { try setOrFail(&config, "server.listen", "\"\(listen)\"") }
        let workers = try args.int("workers", default: config.workers, in: 1...64)
        let site = try NginxSite.locate(args.value("nginx-templates"))
        let binaries = executableDirectory()
        let absent = Serve.optionalPools.filter { access(binaries + "/attest-" + $0, X_OK) != 0 }
        let nginxConf = try site.render(data: data, configuration: config, user: NginxSite.currentUser(), absentPools: absent)
        guard let nginxBinary = findProgram("nginx") else { throw CommandFailure("nginx is not installed (apt-get install nginx)") }
        // Signals: block them so a child start-up cannot race with Ctrl-C; wait for them below.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGCHLD] { sigaddset(&signals, s) }
        sigprocmask(SIG_BLOCK, &signals, nil)

        var children = [ChildProcess]()
        func stopAll() {
            for child in children.reversed() { child.signal(child.name == "nginx" ? SIGQUIT : SIGTERM) }
            for child in children where !child.wait(seconds: 12) { child.signal(SIGKILL); _ = child.wait(seconds: 2) }
        }
        do {
            for endpoint in Self.endpoints {
                let name = "attest-\(endpoint.rawValue)"
                let exe = binaries + "/" + name
                guard access(exe, X_OK) == 0 else { throw CommandFailure("\(exe) is missing: build all products (swift build -c release)") }
                var childArgs = ["--socket", data.runDirectory + "/\(endpoint.rawValue).sock", "--workers", String(workers), "--data", data.path]
                for root in trustRoots { childArgs += ["--trust-root", root] }
                children.append(try ChildProcess(name: name, executable: exe, arguments: childArgs, logFile: data.logDirectory + "/\(name).log"))
            }
            try waitForSockets(children)
            children.append(try ChildProcess(name: "nginx", executable: nginxBinary,
                                             arguments: ["-p", data.runDirectory, "-c", nginxConf, "-e", data.logDirectory + "/error.log"],
                                             logFile: data.logDirectory + "/nginx.out"))
            let base = "http://\(config.listen)"
            try waitForHTTP(base + "/api/v1/attestation/challenge", children)
            printReady(base, workers: workers, trustRoots: trustRoots)
        } catch {
            stopAll()
            throw error
        }
        // Wait for Ctrl-C, SIGTERM, or a child that exits.
        var received: Int32 = 0
        var quickFailures = [String: Int]()
        while true {
            sigwait(&signals, &received)
            if received == SIGCHLD {
                for (i, dead) in children.enumerated() where !dead.isRunning {
                    // nginx is the front door: without it nothing works, so stop. A pool is
                    // restarted (its location answers 502 JSON meanwhile) unless it keeps dying
                    // at start, which is a configuration problem worth stopping for.
                    let quick = monotonicSeconds() - dead.startedAt < 2
                    quickFailures[dead.name] = quick ? (quickFailures[dead.name] ?? 0) + 1 : 0
                    if dead.name == "nginx" || (quickFailures[dead.name] ?? 0) >= 3 {
                        Output.err("\(dead.name) \(dead.exitDescription); stopping. Its log (\(dead.logFile)):\n\(dead.logTail())")
                        stopAll()
                        return 1
                    }
                    Output.err("\(dead.name) \(dead.exitDescription); restarting it (see \(dead.logFile))")
                    if quick { usleep(500_000) }
                    children[i] = try dead.respawn()
                }
                continue
            }
            Output.out("\nstopping…")
            stopAll()
            Output.out("stopped")
            return 0
        }
    }

    func setOrFail(_ config: inout Configuration, _ key: String, _ json: String) throws {
        do { try config.set(key, jsonValue: json) } catch { throw UsageError("\(error)") }
    }

    func createDemoTenant() throws {
        let (_, store) = try openStore(data)
        let time = now()
        try store.write([.durable]) { txn in
            try txn.put(OrgRecord(name: "demo", tier: .pro, ratePerMinute: 0, createdAt: time))
            try txn.put(AppRecord(teamID: "DEMOTEAM01", bundleID: "com.example.demo", org: "demo", policy: .both, createdAt: time))
        }
        Output.out("created demo organization \"demo\" (pro) and app DEMOTEAM01.com.example.demo (environments: both)")
    }

    func waitForSockets(_ children: [ChildProcess]) throws {
        let deadline = monotonicSeconds() + 20
        for endpoint in Self.endpoints {
            let path = data.runDirectory + "/\(endpoint.rawValue).sock"
            while !canConnect(unixSocket: path) {
                if let dead = children.first(where: { !$0.isRunning }) {
                    throw CommandFailure("\(dead.name) \(dead.exitDescription) while starting. Its log (\(dead.logFile)):\n\(dead.logTail())")
                }
                guard monotonicSeconds() < deadline else { throw CommandFailure("\(path) did not come up within 20 s") }
                usleep(20_000)
            }
        }
    }

    func waitForHTTP(_ url: String, _ children: [ChildProcess]) throws {
        let client = HTTPClient(timeoutMilliseconds: 1000)
        let deadline = monotonicSeconds() + 20
        var last = ""
        while monotonicSeconds() < deadline {
            if let nginx = children.last, !nginx.isRunning {
                throw CommandFailure("nginx \(nginx.exitDescription). \(data.logDirectory)/error.log:\n" +
                                     ((try? FileIO.readText(data.logDirectory + "/error.log")) ?? "").split(separator: "\n").suffix(10).joined(separator: "\n"))
            }
            if let response = try? client.send("GET", url), response.status == 200 { return }
            last = (try? client.send("GET", url)).map { "HTTP \($0.status)" } ?? "no answer"
            usleep(50_000)
        }
        throw CommandFailure("\(url) did not answer 200 within 20 s (last: \(last))")
    }

    func printReady(_ base: String, workers: Int, trustRoots: [String]) {
        Output.out("""
            AttestEdge is up: \(base)
              data directory  \(data.path)
              pools           \(Self.endpoints.map { "attest-\($0.rawValue)" }.joined(separator: ", ")) (\(workers) workers each)
              logs            \(data.logDirectory)/
              JWKS            \(base)/.well-known/jwks.json
            try it:
              curl -s \(base)/api/v1/attestation/challenge -H 'X-Bundle-ID: com.example.demo' -H 'X-Team-ID: DEMOTEAM01'
            """)
        let roots = ((try? data.loadConfiguration().testRoots) ?? []) + trustRoots
        if !roots.isEmpty {
            Output.out("  TEST ROOTS TRUSTED: \(roots.joined(separator: ", ")) (software devices will attest; never in production)")
            if FileIO.exists(data.testCADirectory + "/ca.pem") {
                Output.out("""
                  enroll a software device:
                    \(executableDirectory())/attest-device --server \(base) --team DEMOTEAM01 --bundle com.example.demo \\
                      --test-ca \(data.testCADirectory)/ca.pem --state /tmp/demo-device.json enroll
                """)
            }
        }
        Output.out("Ctrl-C stops everything.")
    }
}

func canConnect(unixSocket path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
    }
}
