import AttestConfig
import CFastCGI
#if canImport(Glibc)
import Glibc
#endif

/// A process `attestctl serve` started, with its output appended to a log file.
///
/// Started with `fork` and `execve` (`posix_spawn` can neither change credentials nor, portably,
/// make a process group): everything the child needs is prepared before the fork, and the child
/// only calls async-signal-safe functions until `execve`.
package final class ChildProcess {
    /// Who the child runs as, when serve started as root (`server.user`).
    package struct Credentials {
        let uid: uid_t
        let gid: gid_t
        /// Supplementary groups (`getgrouplist`), set with `setgroups`.
        let groups: [gid_t]
        /// Its `HOME`; the rest of its environment is `ServiceEnvironment`'s, not root's.
        var home = "/"
        /// Keeps CAP_NET_BIND_SERVICE, and only it, across the switch (an ambient capability):
        /// nginx, run as this user, may then bind a port below 1024.
        var bindsLowPorts = false
    }

    let name: String
    let pid: pid_t
    /// The directory of its log, pinned (serve runs as root; the directory is the service user's).
    let logDirectory: PinnedDirectory
    let logName: String
    let executable: String
    let arguments: [String]
    let credentials: Credentials?
    /// The child leads its own process group (`setpgid(0, 0)`): `killGroup` reaches what it forked.
    let ownsProcessGroup: Bool
    let startedAt = monotonicSeconds()
    package private(set) var exitStatus: Int32?

    var logFile: String { logDirectory.path + "/" + logName }

    /// Starts `executable` with `arguments`; stdout and stderr are appended to `logName` in
    /// `logDirectory` (a regular file with one link, opened without following a link: a link
    /// planted there by the service user is refused), stdin is /dev/null, signal dispositions
    /// and mask are the defaults whatever serve blocks. With `credentials` its environment is
    /// `ServiceEnvironment`'s (root's would be readable by that user), else serve's own.
    package init(name: String, executable: String, arguments: [String], logDirectory: PinnedDirectory, logName: String,
         credentials: Credentials? = nil, ownsProcessGroup: Bool = false) throws {
        self.name = name
        self.logDirectory = logDirectory
        self.logName = logName
        self.executable = executable
        self.arguments = arguments
        self.credentials = credentials
        self.ownsProcessGroup = ownsProcessGroup
        let log: Int32
        do { log = try logDirectory.openFile(logName, O_WRONLY | O_CREAT | O_APPEND, mode: 0o644) } catch {
            throw SupervisorError(.start, "cannot open the log of \(name): \(error)")
        }
        defer { close(log) }
        pid = try Self.spawn(executable, arguments, log: log, credentials: credentials, group: ownsProcessGroup)
    }

    /// A new process with the same command line, credentials and group choice.
    func respawn() throws -> ChildProcess {
        try ChildProcess(name: name, executable: executable, arguments: arguments, logDirectory: logDirectory,
                         logName: logName, credentials: credentials, ownsProcessGroup: ownsProcessGroup)
    }

    /// Whether it is still running (reaps it when it has exited).
    var isRunning: Bool {
        guard exitStatus == nil else { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { exitStatus = status; return false }
        return r == 0
    }

    func signal(_ sig: Int32) { if exitStatus == nil { kill(pid, sig) } }

    /// SIGKILL to every process left in its process group: what it forked outlives it otherwise
    /// (nginx's workers keep the port after their master is killed with -9). Linux does not
    /// reuse a pid as long as a process group of that id exists, so this reaches only them.
    func killGroup() {
        guard ownsProcessGroup else { return }
        kill(-pid, SIGKILL)
    }

    /// Whether any process is left in its process group.
    var groupIsAlive: Bool { ownsProcessGroup && kill(-pid, 0) == 0 }

    /// Waits up to `seconds` for it to exit; `true` when it did.
    package func wait(seconds: Double) -> Bool {
        let deadline = monotonicSeconds() + seconds
        while isRunning {
            if monotonicSeconds() > deadline { return false }
            usleep(20_000)
        }
        return true
    }

    /// How much of a log's end root reads to show its last lines: the log is the service
    /// user's to write (a sparse terabyte costs this much, not more).
    static let tailBytes = 64 << 10

    /// The last lines of its log (within its last `tailBytes`), for error messages.
    package func logTail(_ lines: Int = 15) -> String {
        guard let bytes = try? logDirectory.tail(logName, bytes: Self.tailBytes) else { return "" }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .suffix(lines).joined(separator: "\n")
    }

    package var exitDescription: String {
        guard let s = exitStatus else { return "running" }
        if s & 0x7F == 0 { return "exited with status \((s >> 8) & 0xFF)" }
        return "killed by signal \(s & 0x7F)"
    }

    private static func spawn(_ executable: String, _ arguments: [String], log: Int32,
                              credentials: Credentials?, group: Bool) throws -> pid_t {
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0 else {
            throw SupervisorError(.start, "cannot open /dev/null: \(String(cString: strerror(errno)))")
        }
        defer { close(null) }

        let strings = [executable] + arguments
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: strings.count + 1)
        for (i, s) in strings.enumerated() { argv[i] = strdup(s) }
        argv[strings.count] = nil
        defer {
            for i in 0..<strings.count { free(argv[i]) }
            argv.deallocate()
        }
        // The environment, built before the fork: serve's own, or only what ServiceEnvironment keeps.
        let childEnvironment = credentials.map {
            ServiceEnvironment.filtered(ServiceEnvironment.current(), home: $0.home)
        }
        let envp = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
            .allocate(capacity: (childEnvironment?.count ?? 0) + 1)
        for (i, s) in (childEnvironment ?? []).enumerated() { envp[i] = strdup(s) }
        envp[childEnvironment?.count ?? 0] = nil
        defer {
            for i in 0..<(childEnvironment?.count ?? 0) { free(envp[i]) }
            envp.deallocate()
        }
        let groups = credentials?.groups ?? []
        let groupList = UnsafeMutablePointer<gid_t>.allocate(capacity: max(groups.count, 1))
        defer { groupList.deallocate() }
        for (i, g) in groups.enumerated() { groupList[i] = g }
        var empty = sigset_t()
        sigemptyset(&empty)
        let failure = strdup("attestctl serve: cannot switch to the service user, or exec failed\n")!
        defer { free(failure) }
        let failureLength = strlen(failure)

        let child = fork()
        if child < 0 {
            throw SupervisorError(.start, "cannot start \(executable): fork: \(String(cString: strerror(errno)))")
        }
        if child == 0 {
            // The child: async-signal-safe calls only, on values prepared above (no allocation).
            if group { setpgid(0, 0) }
            Glibc.signal(SIGINT, SIG_DFL); Glibc.signal(SIGTERM, SIG_DFL); Glibc.signal(SIGCHLD, SIG_DFL)
            Glibc.signal(SIGHUP, SIG_DFL); Glibc.signal(SIGPIPE, SIG_DFL); Glibc.signal(SIGQUIT, SIG_DFL)
            Glibc.signal(SIGUSR1, SIG_DFL)
            sigprocmask(SIG_SETMASK, &empty, nil)
            dup2(null, 0)
            dup2(log, 1)
            dup2(log, 2)
            if let credentials {
                let keep = credentials.bindsLowPorts
                guard !keep || attest_fcgi_keep_capabilities_across_setuid() == 0,
                      setgroups(groups.count, groupList) == 0, setgid(credentials.gid) == 0,
                      setuid(credentials.uid) == 0,
                      !keep || attest_fcgi_keep_only_bind_capability() == 0 else {
                    _ = write(2, failure, failureLength)
                    _exit(126)
                }
            }
            execve(argv[0]!, argv, childEnvironment == nil ? environ : envp)
            _ = write(2, failure, failureLength)
            _exit(127)
        }
        // Also in the parent, so a kill of the group right after the fork cannot miss it.
        if group { setpgid(child, child) }
        return child
    }
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The directory holding the running executable (its siblings are the other binaries).
func executableDirectory() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return "." }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
}

/// The first of `names` found on PATH or in the usual system directories.
package func findProgram(_ name: String) -> String? {
    let path = environment("PATH") ?? ""
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"] {
        let candidate = dir + "/" + name
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}
