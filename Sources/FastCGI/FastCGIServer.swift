import Glibc

/// Runs a pre-forked pool of FastCGI worker processes on one unix socket.
///
/// ```
/// master ── binds the socket, forks, supervises (see `Supervisor`)
///   ├── worker ── makeResponder(), then accept → respond → finish, one request at a time
///   └── worker ── …
/// ```
/// No threads and no Swift concurrency: each worker is a plain single-threaded process, so a
/// blocking accept or a slow store call holds only that process.
public enum FastCGIServer {
    /// Master: unlinks a stale socket, binds the unix socket (mode `socketMode`), forks
    /// `workers` worker processes, restarts a worker that dies (with a backoff so a worker that
    /// crashes at start cannot fork-bomb), on SIGTERM/SIGINT stops accepting and lets in-flight
    /// requests finish (up to `shutdownGraceSeconds`, then SIGKILL), removes the socket and
    /// returns the exit status. SIGHUP replaces every worker (e.g. to pick up new keys).
    ///
    /// Each worker calls `makeResponder()` after `fork`, so store environments are opened per
    /// process. Events are logged to stderr as `name[pid]: …`.
    ///
    /// - Returns: 0 after a clean stop; 1 if a worker had to be killed or the socket could not
    ///   be bound; 2 for invalid options; 78 if a worker could not make its responder.
    /// `reexecutable`: SIGHUP re-executes this process's binary (see `Reload`); tests that run
    /// a pool inside the test process pass `false` and get worker replacement instead.
    /// `counters`: what the master reports for metrics (`PoolCounters`).
    public static func run(_ options: ServerOptions, name: String, reexecutable: Bool = true,
                           counters: PoolCounters = PoolCounters(),
                           makeResponder: @escaping () throws -> any Responder) -> Int32 {
        let log = Log(name: name)
        do {
            try options.validate()
        } catch {
            log("invalid options: \(error)")
            return 2
        }
        // Signals for the master are taken synchronously (sigtimedwait): block them before the
        // first fork so none is lost, and reset dispositions a parent shell may have set to
        // "ignore" (SIGCHLD ignored would make the kernel reap workers behind our back).
        var signals = Supervisor.signalSet
        var previousMask = sigset_t()
        sigprocmask(SIG_BLOCK, &signals, &previousMask)
        signal(SIGCHLD, SIG_DFL)
        signal(SIGPIPE, SIG_IGN)
        defer { sigprocmask(SIG_SETMASK, &previousMask, nil) }

        if options.checkOnly {
            // A reload's preflight: everything a worker does before it serves, then exit.
            do {
                _ = try makeResponder()
                return 0
            } catch {
                log("check failed: \(error)")
                return Worker.responderFailed
            }
        }
        let socket: ListeningSocket
        let handover = Reload.takeHandover()
        do {
            socket = try handover.map { h throws(FastCGIError) in
                try ListeningSocket.adopt(fd: h.fd, path: options.socketPath)
            } ?? ListeningSocket.bind(options)
        } catch {
            log("cannot listen: \(error)")
            if handover != nil {
                Reload.writeStatus(socketPath: options.socketPath, ok: false,
                                   "the new binary could not take over: \(error)")
            }
            return 1
        }
        Reload.writePID(socketPath: options.socketPath)
        defer { Reload.removeFiles(socketPath: options.socketPath) }
        if let handover {
            counters.reloaded()
            log("""
                took over \(options.socketPath) from the previous binary \
                (\(handover.workers.count) workers to retire)
                """)
        } else {
            log("""
                listening on \(options.socketPath) (mode \(String(options.socketMode, radix: 8)), \
                \(options.workers) workers, body limit \(options.bodyLimit) bytes)
                """)
        }
        var supervisor = Supervisor(options: options, log: log, socket: socket,
                                    executable: reexecutable ? Reload.Executable.current() : nil,
                                    inherited: handover?.workers ?? [], counters: counters,
                                    makeResponder: makeResponder)
        return supervisor.run()
    }
}
