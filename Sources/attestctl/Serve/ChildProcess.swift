import AttestService
#if canImport(Glibc)
import Glibc
#endif

/// A process `attestctl serve` started, with its output appended to a log file.
final class ChildProcess {
    let name: String
    let pid: pid_t
    let logFile: String
    let executable: String
    let arguments: [String]
    let startedAt = monotonicSeconds()
    private(set) var exitStatus: Int32?

    /// Starts `executable` with `arguments`; stdout and stderr go to `logFile`.
    init(name: String, executable: String, arguments: [String], logFile: String) throws {
        self.name = name
        self.logFile = logFile
        self.executable = executable
        self.arguments = arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The children get default signal handling and an empty mask, whatever serve blocks.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw CommandFailure("cannot start \(executable): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// A new process with the same command line.
    func respawn() throws -> ChildProcess {
        try ChildProcess(name: name, executable: executable, arguments: arguments, logFile: logFile)
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

    /// Waits up to `seconds` for it to exit; `true` when it did.
    func wait(seconds: Double) -> Bool {
        let deadline = monotonicSeconds() + seconds
        while isRunning {
            if monotonicSeconds() > deadline { return false }
            usleep(20_000)
        }
        return true
    }

    /// The last lines of its log, for error messages.
    func logTail(_ lines: Int = 15) -> String {
        guard let text = try? FileIO.readText(logFile) else { return "" }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    var exitDescription: String {
        guard let s = exitStatus else { return "running" }
        if s & 0x7F == 0 { return "exited with status \((s >> 8) & 0xFF)" }
        return "killed by signal \(s & 0x7F)"
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
func findProgram(_ name: String) -> String? {
    let path = environment("PATH") ?? ""
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"] {
        let candidate = dir + "/" + name
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}
