import AttestConfig
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// What `attestctl serve` runs once everything is up: it waits for a signal or a death, at
/// most `tick` seconds at a time, and
/// - stops everything on SIGINT, SIGTERM or SIGHUP (exit 0): SIGHUP is the terminal or ssh
///   session closing, which must not leave nginx and the pools running unsupervised;
/// - stops everything when nginx dies (exit 1): nginx is the front door. Its whole process
///   group is killed first, so no orphaned worker keeps the port and answers 502 for ever;
/// - restarts a pool master that died, following its `RestartPolicy`, while nginx and the other
///   pools keep serving, and says so on stderr;
/// - keeps the logs under `LogRotation`'s limit (nginx reopens its own on SIGUSR1).
final class ServeSupervisor {
    static let tick = 0.5

    private(set) var pools: [ChildProcess]
    let nginx: ChildProcess
    let logs: LogRotation
    private var policies: [RestartPolicy]
    private var restartAt: [Double?]

    init(pools: [ChildProcess], nginx: ChildProcess, logs: LogRotation) {
        self.pools = pools
        self.nginx = nginx
        self.logs = logs
        policies = Array(repeating: RestartPolicy(), count: pools.count)
        restartAt = Array(repeating: nil, count: pools.count)
    }

    /// Runs until a stop; `signals` (SIGINT, SIGTERM, SIGHUP, SIGCHLD) must be blocked.
    func run(signals: sigset_t) -> Int32 {
        var set = signals
        while true {
            var timeout = Self.timespec(seconds: nextWake() - monotonicSeconds())
            let received = sigtimedwait(&set, nil, &timeout)
            if received == SIGINT || received == SIGTERM || received == SIGHUP {
                Output.out("\nstopping…")
                Self.stop(pools + [nginx])
                Output.out("stopped")
                return 0
            }
            if !nginx.isRunning {
                nginx.killGroup()
                Output.err("nginx \(nginx.exitDescription); stopping everything (its leftover workers were killed). "
                           + "\(logs.directory.path)/error.log:\n" + Self.tail(logs.directory, "error.log"))
                Self.stop(pools + [nginx])
                return 1
            }
            noticeDeadPools()
            restartDuePools()
            if logs.rotate(warn: { Output.err("*** log rotation: \($0)") }) { nginx.signal(SIGUSR1) }
        }
    }

    private func noticeDeadPools() {
        let now = monotonicSeconds()
        for i in pools.indices where restartAt[i] == nil && !pools[i].isRunning {
            let dead = pools[i]
            let delay = policies[i].delayAfterDeath(uptime: now - dead.startedAt)
            restartAt[i] = now + delay
            let pace = policies[i].quickDeaths > 1 ? " (\(policies[i].quickDeaths) quick deaths in a row)" : ""
            Output.err("""
                *** \(dead.name) \(dead.exitDescription) after \(Self.format(now - dead.startedAt)) s\(pace); \
                restarting it in \(Self.format(delay)) s. Its endpoint answers 502 until then; \
                the other endpoints keep serving. Log: \(dead.logFile)
                """)
        }
    }

    private func restartDuePools() {
        let now = monotonicSeconds()
        for i in pools.indices {
            guard let at = restartAt[i], at <= now else { continue }
            do {
                pools[i] = try pools[i].respawn()
                restartAt[i] = nil
            } catch {
                let delay = policies[i].delayAfterDeath(uptime: 0)
                restartAt[i] = now + delay
                Output.err("*** cannot restart \(pools[i].name): \(error); trying again in \(Self.format(delay)) s")
            }
        }
    }

    private func nextWake() -> Double {
        var wake = monotonicSeconds() + Self.tick
        for at in restartAt { if let at { wake = min(wake, at) } }
        return wake
    }

    /// Stops `children` (nginx gracefully with SIGQUIT, pools with SIGTERM), waits up to 12 s,
    /// then kills what is left, process groups included.
    static func stop(_ children: [ChildProcess]) {
        for child in children.reversed() { child.signal(child.name == "nginx" ? SIGQUIT : SIGTERM) }
        for child in children where !child.wait(seconds: 12) { child.signal(SIGKILL); _ = child.wait(seconds: 2) }
        for child in children { child.killGroup() }
    }

    /// The last lines of the log `name` (a regular file, not followed if a link), read from
    /// its last `ChildProcess.tailBytes` only.
    static func tail(_ directory: PinnedDirectory, _ name: String, lines: Int = 10) -> String {
        let bytes = (try? directory.tail(name, bytes: ChildProcess.tailBytes)) ?? []
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    static func format(_ seconds: Double) -> String {
        let tenths = Int((max(seconds, 0) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    private static func timespec(seconds: Double) -> Glibc.timespec {
        let clamped = max(seconds, 0.001)
        return Glibc.timespec(tv_sec: Int(clamped), tv_nsec: Int((clamped - clamped.rounded(.down)) * 1e9))
    }
}
