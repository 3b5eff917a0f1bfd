internal import CFastCGI
import Glibc

/// The master process of a pool: forks the workers, replaces those that die, stops them on
/// SIGTERM/SIGINT and replaces them all on SIGHUP.
///
/// The master handles no signal asynchronously: SIGTERM, SIGINT, SIGHUP and SIGCHLD stay
/// blocked and are taken one at a time with `sigtimedwait`, so its state changes only here.
///
/// - Restart: a worker that exits on its own is restarted at once if it lived at least
///   `quickExit` seconds; one that died sooner is restarted after a backoff that doubles
///   from `firstBackoff` to `maxBackoff` (a worker crashing at start cannot fork-bomb).
///   A worker whose responder cannot be made (`Worker.responderFailed`) is a configuration
///   error: the pool stops and `run` returns 78.
/// - Stop: the socket file is unlinked and the master's descriptor closed (new connections
///   fail at once), every worker gets SIGTERM, finishes its in-flight request and serves the
///   connections already queued; any still running after `shutdownGraceSeconds` gets SIGKILL.
///   Returns 0, or 1 if one was killed.
/// - Reload (SIGHUP): the binary is re-executed in place after a preflight (see `Reload`): a
///   new build or configuration takes over the socket with the same PID, and the old workers
///   finish what they hold. A binary that fails its preflight is refused and the pool keeps
///   serving as it was. Without an executable to run (in-process tests), every worker is
///   replaced instead.
/// - Counts (`PoolCounters`, for metrics): the workers running after every change, each restart
///   (not the stops of a stop or a reload), each completed reload (counted by the new image).
struct Supervisor {
    static let quickExit = 1.0
    static let firstBackoff = 0.1
    static let maxBackoff = 5.0

    private struct Slot {
        var pid: pid_t? = nil
        var startedAt = 0.0
        var backoff = 0.0
        var restartAt: Double? = 0
    }

    let options: ServerOptions
    let log: Log
    let socket: ListeningSocket
    let makeResponder: () throws -> any Responder
    /// What a reload re-executes; `nil` replaces workers in place instead.
    let executable: Reload.Executable?
    let counters: PoolCounters
    private var slots: [Slot]
    /// Workers of the previous image after a handover: stopped once ours have started.
    private var inherited: [pid_t]
    private var retiring: Set<pid_t> = []
    private var deadline: Double? = nil
    private var killed = false
    private var exitStatus: Int32 = 0

    init(options: ServerOptions, log: Log, socket: ListeningSocket, executable: Reload.Executable? = nil,
         inherited: [pid_t] = [], counters: PoolCounters = PoolCounters(),
         makeResponder: @escaping () throws -> any Responder) {
        self.counters = counters
        self.options = options
        self.log = log
        self.socket = socket
        self.executable = executable
        self.inherited = inherited
        self.makeResponder = makeResponder
        slots = Array(repeating: Slot(), count: options.workers)
    }

    /// The signals the master waits for; block them before calling `run`.
    static var signalSet: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&set, signal) }
        return set
    }

    mutating func run() -> Int32 {
        var set = Self.signalSet
        while true {
            startDueWorkers()
            counters.workers(slots.filter { $0.pid != nil }.count)
            retireInherited()
            if deadline != nil, liveCount == 0 { break }
            var info = siginfo_t()
            var timeout = Self.timespec(seconds: nextWake() - MonotonicClock.now())
            let signal = sigtimedwait(&set, &info, &timeout)
            switch signal {
            case SIGTERM, SIGINT: stop(because: signal == SIGTERM ? "SIGTERM" : "SIGINT")
            case SIGHUP: reload()
            default: break
            }
            reap()
            if let deadline, !killed, MonotonicClock.now() >= deadline {
                killed = true
                exitStatus = exitStatus == 0 ? 1 : exitStatus
                log("grace of \(options.shutdownGraceSeconds) s over: killing \(liveCount) workers")
                forEachLive { kill($0, SIGKILL) }
            }
        }
        counters.workers(0)
        log("stopped")
        return exitStatus
    }

    private var liveCount: Int { slots.filter { $0.pid != nil }.count + retiring.count }

    private func forEachLive(_ body: (pid_t) -> Void) {
        for slot in slots { if let pid = slot.pid { body(pid) } }
        for pid in retiring { body(pid) }
    }

    private func nextWake() -> Double {
        var wake = MonotonicClock.now() + 5
        if let deadline, !killed { wake = min(wake, deadline) }
        for slot in slots { if slot.pid == nil, let at = slot.restartAt { wake = min(wake, at) } }
        return wake
    }

    private mutating func startDueWorkers() {
        guard deadline == nil else { return }
        let now = MonotonicClock.now()
        for index in slots.indices {
            guard slots[index].pid == nil, let at = slots[index].restartAt, at <= now else { continue }
            let masterPID = getpid()
            let pid = fork()
            if pid == 0 {
                Worker(listenFD: socket.fd, options: options, log: log, masterPID: masterPID).run(makeResponder)
            }
            if pid < 0 {
                log("fork failed: \(errnoDescription()); retrying in 1 s")
                slots[index].restartAt = now + 1
                continue
            }
            slots[index].pid = pid
            slots[index].startedAt = now
            slots[index].restartAt = nil
            log("worker \(pid) started")
        }
    }

    private mutating func reap() {
        var status: Int32 = 0
        while true {
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return }
            let how = Self.describe(status)
            if retiring.remove(pid) != nil {
                log("worker \(pid) (replaced) \(how)")
                continue
            }
            guard let index = slots.firstIndex(where: { $0.pid == pid }) else { continue }
            slots[index].pid = nil
            if deadline != nil {
                log("worker \(pid) \(how)")
                continue
            }
            if attest_fcgi_wifexited(status) != 0, attest_fcgi_wexitstatus(status) == Worker.responderFailed {
                log("worker \(pid) could not make its responder: stopping the pool")
                exitStatus = Worker.responderFailed
                stop(because: "configuration error")
                continue
            }
            let now = MonotonicClock.now()
            var slot = slots[index]
            slot.backoff = now - slot.startedAt < Self.quickExit
                ? min(max(slot.backoff * 2, Self.firstBackoff), Self.maxBackoff) : 0
            slot.restartAt = now + slot.backoff
            slots[index] = slot
            counters.restarted()
            log("worker \(pid) \(how); restarting in \(Self.format(slot.backoff)) s")
        }
    }

    private mutating func stop(because reason: String) {
        if deadline != nil {
            log("\(reason) again: killing \(liveCount) workers now")
            killed = true
            exitStatus = exitStatus == 0 ? 1 : exitStatus
            forEachLive { kill($0, SIGKILL) }
            return
        }
        deadline = MonotonicClock.now() + Double(options.shutdownGraceSeconds)
        socket.close()
        for index in slots.indices { slots[index].restartAt = nil }
        log("\(reason): stopping \(liveCount) workers (grace \(options.shutdownGraceSeconds) s)")
        forEachLive { kill($0, SIGTERM) }
    }

    /// After a handover: once our workers run, the previous image's get SIGTERM (they are
    /// our children too: the PID did not change) and are reaped as retiring.
    private mutating func retireInherited() {
        guard !inherited.isEmpty else { return }
        let started = slots.filter { $0.pid != nil }.count
        guard started == slots.count || deadline != nil else { return }
        log("handover: \(started) new workers running; stopping the \(inherited.count) of the previous binary")
        for pid in inherited where kill(pid, SIGTERM) == 0 { retiring.insert(pid) }
        inherited = []
        Reload.writeStatus(socketPath: options.socketPath, ok: true,
                           "pid \(getpid()) runs \(executable?.path ?? "?") with \(started) workers")
    }

    private mutating func reload() {
        guard deadline == nil else { return }
        guard let executable else { return replaceWorkers() }
        log("SIGHUP: checking \(executable.path) before re-executing it")
        if let problem = executable.preflight(timeout: Reload.preflightSeconds) {
            log("reload refused, still serving the running binary: \(problem)")
            Reload.writeStatus(socketPath: options.socketPath, ok: false, problem)
            return
        }
        reap()
        // The previous image's workers too, if ours have not all started yet (a fork that
        // failed and waits for its retry): left out, the next image would never retire them.
        let workers = slots.compactMap(\.pid) + Array(retiring) + inherited
        socket.keepAcrossExec()
        log("re-executing \(executable.path) (handing over the socket and \(workers.count) workers)")
        let failure = executable.exec(handover: Reload.Handover(fd: socket.fd, workers: workers))
        _ = fcntl(socket.fd, F_SETFD, FD_CLOEXEC)
        log("reload failed, still serving the running binary: \(failure)")
        Reload.writeStatus(socketPath: options.socketPath, ok: false, failure)
    }

    private mutating func replaceWorkers() {
        log("SIGHUP: replacing \(slots.filter { $0.pid != nil }.count) workers")
        counters.reloaded()
        for index in slots.indices {
            guard let pid = slots[index].pid else { continue }
            retiring.insert(pid)
            kill(pid, SIGTERM)
            slots[index] = Slot()
        }
    }

    static func describe(_ status: Int32) -> String {
        if attest_fcgi_wifsignaled(status) != 0 { return "killed by signal \(attest_fcgi_wtermsig(status))" }
        return "exited with status \(attest_fcgi_wexitstatus(status))"
    }

    private static func format(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    private static func timespec(seconds: Double) -> Glibc.timespec {
        let clamped = max(seconds, 0.001)
        return Glibc.timespec(tv_sec: Int(clamped), tv_nsec: Int((clamped - clamped.rounded(.down)) * 1e9))
    }
}
