import AttestConfig
import AttestOperations
import AttestService
import CLISupport
import HTTPClient
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl serve` once the data directory is ready (initialised, its test CA made when
/// asked: attestctl does that first): renders nginx's configuration, starts the pools, the
/// webhook sender and nginx, waits until each answers, then supervises them until a signal.
package struct Serve {
    let args: Arguments
    let data: DataDirectory

    /// `args`: serve's parsed arguments (`--data`, `--listen`, `--metrics-listen`, `--workers`, `--trust-root`,
    /// `--nginx-templates`, `--user`, `--allow-private-webhooks`, `--tls-cert`, `--tls-key`).
    package init(_ args: Arguments) {
        self.args = args
        data = DataDirectory(flag: args.value("data"))
    }

    static let endpoints: [Endpoint] = [.challenge, .validate, .refresh, .mad, .webhooks, .monitor, .flags, .feedback, .org]
    /// Pools site.conf routes to that later capabilities add: while their executables are
    /// absent their locations answer 501 JSON. Every routed pool exists now.
    static let optionalPools: [String] = []

    package func run() throws -> Int32 {
        let trustRoots = args.values("trust-root").map(FileIO.absolute)
        var config = try data.loadConfiguration()
        // Both set, then checked together: `--listen` alone may meet the old metricsListen.
        if let listen = args.value("listen") { try setOrFail(&config, "server.listen", "\"\(listen)\"") }
        if let listen = args.value("metrics-listen") {
            try setOrFail(&config, "server.metricsListen", "\"\(listen)\"")
        }
        do { try config.validate() } catch { throw UsageError("\(error)") }
        let workers = try args.int("workers", default: config.workers, in: 1...64)
        let site = try NginxSite.locate(args.value("nginx-templates"))
        let binaries = executableDirectory()
        let absent = Serve.optionalPools.filter { access(binaries + "/attest-" + $0, X_OK) != 0 }
        let user = try serviceUser(named: args.value("user") ?? config.serviceUser,
                                   chosenByRoot: args.value("user") != nil, trustRoots: trustRoots)
        let startID = NginxSite.newStartID()
        let tls = try tlsSite(serviceUser: user)
        // Written as the data directory's owner (nginx reads the files as it too): DATA/nginx
        // may be a link the service user planted (to /etc/nginx, say), and root would write
        // through it. The templates are read as root: they may be where that user cannot read.
        let nginxConf = try site.render(data: data, configuration: config,
                                        user: user?.nginxUser ?? NginxSite.currentUser(),
                                        startID: startID, absentPools: absent, tls: tls) { path, text in
            try asDataOwner(data) { try FileIO.writeAtomically(path, text: text) }
        }
        guard let nginxBinary = findProgram("nginx") else {
            throw SupervisorError(.start, "nginx is not installed (apt-get install nginx)")
        }
        // nginx.conf loads it: without it nginx would refuse the whole site.
        guard FileIO.exists(NginxSite.nchanModule) else {
            throw SupervisorError(.start, "the flag stream needs nginx's nchan module, and \(NginxSite.nchanModule) "
                                          + "is missing: apt-get install libnginx-mod-nchan")
        }
        try closeRunDirectory()
        // DATA/log, opened once and never through a link: as root, every log is opened relative to it.
        let logs = try PinnedDirectory.open(data.path).directory("log", create: 0o755)
        // Signals: block them so a child start-up cannot race with Ctrl-C; wait for them below.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGCHLD] { sigaddset(&signals, s) }
        sigprocmask(SIG_BLOCK, &signals, nil)

        var children = [ChildProcess]()
        let supervisor: ServeSupervisor
        do {
            for endpoint in Self.endpoints {
                let name = "attest-\(endpoint.rawValue)"
                let exe = binaries + "/" + name
                guard access(exe, X_OK) == 0 else {
                    throw SupervisorError(.start, "\(exe) is missing: build all products (swift build -c release)")
                }
                var childArgs = ["--socket", data.runDirectory + "/\(endpoint.rawValue).sock", "--workers",
                                 String(workers), "--data", data.path]
                for root in trustRoots { childArgs += ["--trust-root", root] }
                if endpoint == .webhooks && args.flag("allow-private-webhooks") {
                    childArgs.append("--allow-private-destinations")
                }
                children.append(try ChildProcess(name: name, executable: exe, arguments: childArgs,
                                                 logDirectory: logs, logName: "\(name).log",
                                                 credentials: user?.credentials))
            }
            // The webhook sender: restarted like a pool if it dies; the only process that connects out.
            children.append(try ChildProcess(name: "attest-webhooks-deliver", executable: binaries + "/attest-webhooks",
                                             arguments: ["deliver", "--data", data.path]
                                                 + (args.flag("allow-private-webhooks")
                                                    ? ["--allow-private-destinations"] : []),
                                             logDirectory: logs, logName: "attest-webhooks-deliver.log",
                                             credentials: user?.credentials))
            // The receipt redeemer (Apple's risk metric): restarted like the sender; connects out too.
            children.append(try ChildProcess(name: "attest-receipts", executable: binaries + "/attest-receipts",
                                             arguments: ["--data", data.path],
                                             logDirectory: logs, logName: "attest-receipts.log",
                                             credentials: user?.credentials))
            try waitForSockets(children)
            try removeStalePublisherSocket()
            raiseOpenFileLimit()
            // nginx leads its own process group: if its master dies, its workers can be found.
            // As root it runs as the service user too, master included: everything it opens by
            // path (its configuration, pid file, temporary directories and logs) is in DATA, the
            // service user's, so a link planted there reaches only what that user could anyway.
            var nginxCredentials = user?.credentials
            let listen = try NginxSite.listenAddress(config)
            nginxCredentials?.bindsLowPorts = listen.port < 1024
            let nginx = try ChildProcess(name: "nginx", executable: nginxBinary,
                                         arguments: ["-p", data.runDirectory, "-c", nginxConf, "-e",
                                                     data.logDirectory + "/error.log"],
                                         logDirectory: logs, logName: "nginx.out", credentials: nginxCredentials,
                                         ownsProcessGroup: true)
            children.append(nginx)
            let base = (tls == nil ? "http://" : "https://") + listen.authority
            try waitForOurNginx(base, startID: startID, nginx)
            try waitForHTTP(base + "/api/v1/attestation/challenge", nginx)
            supervisor = ServeSupervisor(pools: Array(children.dropLast()), nginx: nginx,
                                         logs: LogRotation(directory: logs, maxBytes: config.logMaxMiB << 20))
            printReady(base, workers: workers, trustRoots: trustRoots, user: user, tls: tls,
                       metrics: try NginxSite.metricsListenAddress(config).localURL(path: "/metrics"))
        } catch {
            ServeSupervisor.stop(children)
            throw error
        }
        return supervisor.run(signals: signals)
    }

    /// As root: the account the pools and nginx's workers run as (`server.user`), created if
    /// it is the default and missing, with the data directory handed to it and made reachable
    /// (a directory above it that blocks the user gets a search ACL entry for it alone, said
    /// loudly). `nil` when serve does not run as root or `server.user` is root.
    ///
    /// `config.json` is the service user's to write, so a name read from it (`chosenByRoot`
    /// false) may only name the account that already owns the data directory (or any account
    /// while root still owns it, as after `init`): otherwise that user could pick the identity
    /// root hands the data directory and every process to, root's included.
    func serviceUser(named name: String, chosenByRoot: Bool, trustRoots: [String]) throws -> ServiceUser? {
        guard geteuid() == 0 else { return nil }
        guard Configuration.isUserName(name) else {
            throw SupervisorError(.serviceUser, "server.user \(name.debugDescription) is not a user name")
        }
        let user = try ServiceUser.resolve(name)
        var info = stat()
        guard stat(data.path, &info) == 0 else {
            throw SupervisorError(.serviceUser, "cannot stat \(data.path): \(String(cString: strerror(errno)))")
        }
        if !chosenByRoot && info.st_uid != 0 && info.st_uid != user.uid {
            throw SupervisorError(.serviceUser, """
                server.user is \(name), but \(data.path) belongs to uid \(info.st_uid): config.json is that user's to \
                write, so it cannot choose another account to run as. If \(name) is what you want, say so on the \
                command line: attestctl serve --user \(name) (root's choice; DATA is handed to it)
                """)
        }
        guard user.uid != 0 else {
            Output.err("WARNING: server.user is \(name): nginx's workers and the pools run as root")
            return nil
        }
        try user.takeOwnership(of: data.path)
        for path in [data.path] + trustRoots {
            for dir in try user.makeReachable(path) {
                Output.err("NOTE: \(dir) kept \(name) from reaching \(path): granted it search permission there, "
                           + "and only that (POSIX ACL u:\(name):x; undo: setfacl -x u:\(name) \(dir))")
            }
        }
        return user
    }

    /// `--tls-cert FILE --tls-key FILE` (both or neither). Read as the caller, before anything
    /// starts. As root, nginx runs as the service user and must read the key as that user: the
    /// two files are copied into DATA/nginx (tls-certificate.pem 0644, tls-key.pem 0600), written
    /// as the data directory's owner like the other rendered files, and root never reads the
    /// copies back, so whatever that user puts there reaches only its own nginx. As a plain user
    /// the files are used where they are.
    func tlsSite(serviceUser user: ServiceUser?) throws -> TLSSite? {
        switch (args.value("tls-cert"), args.value("tls-key")) {
        case (nil, nil):
            try removeTLSCopies()
            return nil
        case (.some, nil), (nil, .some): throw UsageError("--tls-cert FILE and --tls-key FILE go together")
        case (let cert?, let key?):
            let loaded = try TLSSite.load(certificate: cert, key: key)
            guard user != nil else {
                try removeTLSCopies()
                return loaded.site
            }
            let copy = TLSSite(certificate: data.nginxDirectory + "/" + Self.tlsCopies[0],
                               key: data.nginxDirectory + "/" + Self.tlsCopies[1], stapling: loaded.site.stapling)
            try asDataOwner(data) {
                try FileIO.writeAtomically(copy.certificate, text: loaded.certificatePEM, mode: 0o644)
                try FileIO.writeAtomically(copy.key, text: loaded.keyPEM, mode: 0o600)
            }
            return copy
        }
    }

    /// In DATA/nginx: the certificate chain and the key root copies there for nginx (which runs
    /// as the service user) when it serves TLS.
    static let tlsCopies = ["tls-certificate.pem", "tls-key.pem"]

    /// Removes an earlier root start's copies when this start does not use them, so the key
    /// does not stay in the service user's directory. As the data directory's owner, and
    /// unlink(2) removes a link, never its target.
    func removeTLSCopies() throws {
        try asDataOwner(data) {
            for name in Self.tlsCopies where unlink(data.nginxDirectory + "/" + name) != 0 && errno != ENOENT {
                throw SupervisorError(.start, "cannot remove \(data.nginxDirectory)/\(name), the TLS copy of "
                                              + "an earlier start: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Makes DATA/run no wider than `DataDirectory.runDirectoryMode` (0750; made if missing):
    /// nginx makes the publisher socket there 0666, so the directory is what keeps other local
    /// accounts from publishing forged flags to every stream. An older attestctl made it 0755.
    /// As the data directory's owner: a link planted at DATA/run leads only where that account
    /// could go itself.
    func closeRunDirectory() throws {
        let path = data.runDirectory
        try asDataOwner(data) {
            if mkdir(path, DataDirectory.runDirectoryMode) != 0 && errno != EEXIST {
                throw SupervisorError(.start, "cannot make \(path): \(String(cString: strerror(errno)))")
            }
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else {
                throw SupervisorError(.start, "cannot open \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                throw SupervisorError(.start, "cannot stat \(path): \(String(cString: strerror(errno)))")
            }
            let mode = info.st_mode & 0o7777
            guard mode & 0o777 & ~DataDirectory.runDirectoryMode != 0 else { return }
            guard fchmod(fd, mode & ~(0o777 & ~DataDirectory.runDirectoryMode)) == 0 else {
                throw SupervisorError(.start, "\(path) is \(String(mode, radix: 8)) and cannot be made "
                                              + "\(String(DataDirectory.runDirectoryMode, radix: 8)) (it holds the "
                                              + "flag stream's publisher socket): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Removes the flag stream's publisher socket (`RUN/flags-publish.sock`) when it is a socket
    /// nobody accepts on: an nginx killed without its cleanup leaves it, and the next nginx
    /// would then fail to bind ("Address already in use"). One that takes connections belongs
    /// to a running nginx (another serve on this data directory): nginx then fails on its own.
    /// As the data directory's owner: DATA/run is the service user's, and a link it planted
    /// there (for DATA/run itself) must not lead root's unlink elsewhere; `lstat` never follows
    /// the last component, so a link at the socket's name is left alone.
    func removeStalePublisherSocket() throws {
        let path = FlagChannel.publishSocket(socketDirectory: data.runDirectory)
        try asDataOwner(data) {
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, !canConnect(unixSocket: path) else {
                return
            }
            guard unlink(path) == 0 || errno == ENOENT else {
                throw SupervisorError(.start, "cannot remove the stale \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Raises this process's soft limit on open files to its hard limit, for nginx to inherit:
    /// every flag stream holds a connection (nginx.conf allows 16384 per worker). No
    /// `worker_rlimit_nofile`: nginx not started as root cannot raise it and logs an alert.
    func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    func setOrFail(_ config: inout Configuration, _ key: String, _ json: String) throws {
        do { try config.set(key, jsonValue: json, validating: false) } catch { throw UsageError("\(error)") }
    }

    func waitForSockets(_ children: [ChildProcess]) throws {
        let deadline = monotonicSeconds() + 20
        for endpoint in Self.endpoints {
            let path = data.runDirectory + "/\(endpoint.rawValue).sock"
            while !canConnect(unixSocket: path) {
                if let dead = children.first(where: { !$0.isRunning }) {
                    throw SupervisorError(.start, "\(dead.name) \(dead.exitDescription) while starting. "
                                                  + "Its log (\(dead.logFile)):\n\(dead.logTail())")
                }
                guard monotonicSeconds() < deadline else {
                    throw SupervisorError(.start, "\(path) did not come up within 20 s")
                }
                usleep(20_000)
            }
        }
    }

    /// Waits until the nginx answering on the port is the one just started: its readiness
    /// server answers this start's id. Another process on the port (nginx workers left from an
    /// earlier start, another program) cannot, and nginx exits when it cannot bind.
    /// Over https the certificate is not checked (`verifiesPeer` false): the start id proves
    /// who answers, and the certificate may be for a name other than the listen address.
    func waitForOurNginx(_ base: String, startID: String, _ nginx: ChildProcess) throws {
        let client = HTTPClient(timeoutMilliseconds: 1000, verifiesPeer: false)
        let host = "ready-\(startID).attestedge.invalid"
        try poll("nginx on \(base) answering this start's id", nginx) {
            guard let r = try? client.send("GET", base + "/.attestedge/ready", headers: [("Host", host)]) else {
                return "no answer"
            }
            return r.status == 200 && r.text == startID ? nil : "HTTP \(r.status), not this start's id"
        }
    }

    /// Waits until `url` answers 200 through nginx (the pools are reachable).
    func waitForHTTP(_ url: String, _ nginx: ChildProcess) throws {
        let client = HTTPClient(timeoutMilliseconds: 1000, verifiesPeer: false)
        try poll("\(url) answering 200", nginx) {
            guard let r = try? client.send("GET", url) else { return "no answer" }
            return r.status == 200 ? nil : "HTTP \(r.status)"
        }
    }

    /// Calls `attempt` every 50 ms for up to 20 s until it returns `nil` (its other answers say
    /// what it saw); throws with nginx's error log if nginx exits meanwhile.
    private func poll(_ what: String, _ nginx: ChildProcess, _ attempt: () -> String?) throws {
        let deadline = monotonicSeconds() + 20
        var last = ""
        while monotonicSeconds() < deadline {
            if !nginx.isRunning {
                nginx.killGroup()
                throw SupervisorError(.start, "nginx \(nginx.exitDescription). \(data.logDirectory)/error.log:\n"
                                     + ((try? PinnedDirectory.open(data.path).directory("log"))
                                        .map { ServeSupervisor.tail($0, "error.log") } ?? ""))
            }
            guard let problem = attempt() else { return }
            last = problem
            usleep(50_000)
        }
        throw SupervisorError(.start, "waited 20 s for \(what) (last: \(last))")
    }

    func printReady(_ base: String, workers: Int, trustRoots: [String], user: ServiceUser?, tls: TLSSite?,
                    metrics: String) {
        Output.out("""
            AttestEdge is up: \(base)
              data directory  \(data.path)
              pools           \(Self.endpoints.map { "attest-\($0.rawValue)" }.joined(separator: ", ")) (\(workers) workers each)
              webhook sender  attest-webhooks deliver\(args.flag("allow-private-webhooks") ? " (PRIVATE DESTINATIONS ALLOWED: tests only)" : "")
              receipts        attest-receipts (redeems App Attest receipts with Apple)
              runs as         \(user.map { "\($0.name) (nginx and the pools)" } ?? NginxSite.currentUser())
              logs            \(data.logDirectory)/
              health          \(base)/healthz
              metrics         \(metrics) (Prometheus; attestctl status --url \(metrics))
              console         \(base)/console/ (sign in: \(executableDirectory())/attestctl console login --org demo --role admin --data \(data.path))
              JWKS            \(base)/.well-known/jwks.json\(tls.map { site in
                  "\n  TLS             \(site.certificate) (TLS 1.2/1.3, HTTP/2, HSTS"
                  + (site.stapling ? ", OCSP stapling)" : "; no OCSP responder in it: no stapling)")
              } ?? "")
            try it\(tls == nil ? "" : " (with --cacert/--ca-file the CA that issued the certificate)"):
              curl -s\(tls == nil ? "" : " --cacert CA.pem") \(base)/api/v1/attestation/challenge \\
                -H 'X-Bundle-ID: com.example.demo' -H 'X-Team-ID: DEMOTEAM01'
            """)
        let roots = ((try? data.loadConfiguration().testRoots) ?? []) + trustRoots
        if !roots.isEmpty {
            Output.out("  TEST ROOTS TRUSTED: \(roots.joined(separator: ", ")) "
                       + "(software devices will attest; never in production)")
            if FileIO.exists(data.testCADirectory + "/ca.pem") {
                Output.out("""
                  enroll a software device:
                    \(executableDirectory())/attest-device --server \(base) --team DEMOTEAM01 --bundle com.example.demo \\
                      --test-ca \(data.testCADirectory)/ca.pem \(tls == nil ? "" : "--ca-file CA.pem ")\
                --state /tmp/demo-device.json enroll
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
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
        }
    }
}
