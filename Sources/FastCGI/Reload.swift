internal import CFastCGI
import Glibc

/// Reloading a pool by re-executing its binary in place, so a new build (or a new
/// configuration) replaces a running pool without refusing a single connection and without
/// changing the master's PID (what `attestctl serve` and systemd watch).
///
/// On SIGHUP the master:
/// 1. runs a preflight, `<executable> <same arguments> --check`, which must exit 0 within
///    `preflightSeconds` (it parses the options and makes a responder, binding nothing); a
///    binary that cannot start is refused there and the running pool keeps serving;
/// 2. `execve`s the executable with the same PID, the listening descriptor kept open and
///    `ATTEST_FCGI_HANDOVER="fd=<n> workers=<pid>,<pid>…"` in the environment;
/// 3. the new image adopts the socket, forks its workers, then sends SIGTERM to the old
///    ones, which finish the requests they hold (connections keep queueing on the one socket
///    throughout, and either generation accepts them).
///
/// Files beside the socket: `<socket>.pid` (the master's PID) and `<socket>.reload`, one line
/// `<unix time> ok|failed <text>` written after every reload attempt (`attestctl reload`
/// waits for it).
enum Reload {
    static let environmentName = "ATTEST_FCGI_HANDOVER"
    static let preflightSeconds = 30.0

    struct Handover: Equatable {
        let fd: Int32
        let workers: [pid_t]

        var encoded: String { "fd=\(fd) workers=" + workers.map(String.init).joined(separator: ",") }

        init(fd: Int32, workers: [pid_t]) {
            self.fd = fd
            self.workers = workers
        }

        init?(encoded: String) {
            var fd: Int32?
            var workers = [pid_t]()
            for part in encoded.split(separator: " ") {
                if part.hasPrefix("fd=") { fd = Int32(part.dropFirst(3)) }
                if part.hasPrefix("workers=") {
                    workers = part.dropFirst(8).split(separator: ",").compactMap { pid_t($0) }
                }
            }
            guard let fd, fd >= 0 else { return nil }
            self.fd = fd
            self.workers = workers
        }
    }

    /// The handover left by the previous image, removed from the environment.
    static func takeHandover() -> Handover? {
        guard let raw = getenv(environmentName) else { return nil }
        let value = String(cString: raw)
        unsetenv(environmentName)
        return Handover(encoded: value)
    }

    /// This process's executable as it was started (a path, so a file replaced at that path
    /// is what a reload runs) and its arguments after `argv[0]`.
    struct Executable {
        let path: String
        let arguments: [String]

        static func current() -> Executable {
            let argv = CommandLine.arguments
            var path = argv.first ?? ""
            if !path.contains("/") {
                var buffer = [CChar](repeating: 0, count: 4096)
                let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
                path = n > 0 ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : path
            } else if !path.hasPrefix("/") {
                var buffer = [CChar](repeating: 0, count: 4096)
                if getcwd(&buffer, buffer.count) != nil { path = String(cString: buffer) + "/" + path }
            }
            return Executable(path: path, arguments: Array(argv.dropFirst()))
        }

        /// Runs `path arguments… --check`; `nil` when it exits 0 in time, else what went wrong
        /// (with the tail of its stderr).
        func preflight(timeout: Double) -> String? {
            var pipeFDs: [Int32] = [0, 0]
            guard pipe(&pipeFDs) == 0 else { return "pipe: \(errnoDescription())" }
            for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 2)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            var empty = sigset_t()
            sigemptyset(&empty)
            posix_spawnattr_setsigmask(&attributes, &empty)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
            defer {
                posix_spawn_file_actions_destroy(&actions)
                posix_spawnattr_destroy(&attributes)
            }
            let argv = [path] + arguments + ["--check"]
            var cArgs = argv.map { strdup($0) } + [nil]
            defer { for p in cArgs { free(p) } }
            var pid: pid_t = 0
            let rc = posix_spawn(&pid, path, &actions, &attributes, &cArgs, environ)
            Glibc.close(pipeFDs[1])
            defer { Glibc.close(pipeFDs[0]) }
            guard rc == 0 else { return "cannot run \(path): \(errnoDescription(rc))" }
            _ = fcntl(pipeFDs[0], F_SETFL, O_NONBLOCK)
            var output = [UInt8]()
            let deadline = MonotonicClock.now() + timeout
            var status: Int32 = 0
            while true {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(pipeFDs[0], &chunk, chunk.count)
                if n > 0 {
                    output += chunk[..<n]
                    if output.count > 65_536 { output.removeFirst(output.count - 65_536) }
                }
                let done = waitpid(pid, &status, WNOHANG)
                if done == pid { break }
                if MonotonicClock.now() > deadline {
                    kill(pid, SIGKILL)
                    _ = waitpid(pid, &status, 0)
                    return "\(path) --check did not finish within \(Int(timeout)) s"
                }
                if n <= 0 { usleep(20_000) }
            }
            while true {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(pipeFDs[0], &chunk, chunk.count)
                guard n > 0 else { break }
                output += chunk[..<n]
            }
            if attest_fcgi_wifexited(status) != 0 && attest_fcgi_wexitstatus(status) == 0 { return nil }
            let tail = String(decoding: output.suffix(600), as: UTF8.self)
                .split(separator: "\n").suffix(3).joined(separator: " | ")
            return "\(path) --check \(Supervisor.describe(status))" + (tail.isEmpty ? "" : ": \(tail)")
        }

        /// Replaces this process image; returns only on failure, with the reason.
        func exec(handover: Handover) -> String {
            setenv(Reload.environmentName, handover.encoded, 1)
            let argv = [path] + arguments
            var cArgs = argv.map { strdup($0) } + [nil]
            execv(path, &cArgs)
            let reason = errnoDescription()
            for p in cArgs { free(p) }
            unsetenv(Reload.environmentName)
            return "execv \(path): \(reason)"
        }
    }

    static func writePID(socketPath: String) {
        writeLine(socketPath + ".pid", "\(getpid())")
    }

    static func removeFiles(socketPath: String) {
        unlink(socketPath + ".pid")
    }

    static func writeStatus(socketPath: String, ok: Bool, _ text: String) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        // Nanoseconds too: `attestctl reload` waits for the line to change, and two reloads
        // with the same outcome in one second would otherwise look like none.
        let nanoseconds = String(now.tv_nsec)
        let stamp = "\(now.tv_sec)." + String(repeating: "0", count: max(0, 9 - nanoseconds.count)) + nanoseconds
        writeLine(socketPath + ".reload", "\(stamp) \(ok ? "ok" : "failed") \(text)")
    }

    private static func writeLine(_ path: String, _ line: String) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
        rename(temporary, path)
    }
}
