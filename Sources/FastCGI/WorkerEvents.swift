internal import CFastCGI
import Glibc

/// What a worker waits for between requests: a connection on the shared listening socket, or
/// a stop (SIGTERM or SIGINT) — one `epoll_wait` on both.
///
/// The stop signals stay blocked for the worker's whole life and are read through a
/// `signalfd`, never by a handler: a stop that arrives while a request is being accepted,
/// read, handled or written leaves the signalfd readable and is reported by the next wait,
/// and a stop during the wait ends it. No point exists where a stop can be missed or cut a
/// request short, and no async-signal-safety rules apply to anything the worker runs.
struct WorkerEvents {
    struct Ready {
        var connection: Bool
        var stop: Bool
    }

    private let epoll: Int32

    /// Sets the worker's dispositions, blocks exactly the stop signals and builds the event
    /// set.
    init(listenFD: Int32) throws(FastCGIError) {
        // The master reloads on SIGHUP; a terminal hangup must not kill workers mid-request.
        attest_fcgi_sigdisposition(SIGHUP, 1)
        // A stray SIGUSR1 (libfcgi's "shut down" signal, which an old script may still send)
        // must not end a worker mid-request.
        attest_fcgi_sigdisposition(SIGUSR1, 1)
        attest_fcgi_sigdisposition(SIGPIPE, 1)
        attest_fcgi_sigdisposition(SIGCHLD, 0)
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        sigaddset(&blocked, SIGINT)
        sigprocmask(SIG_SETMASK, &blocked, nil)
        epoll = attest_fcgi_worker_events(listenFD)
        guard epoll >= 0 else { throw FastCGIError(.socket, "epoll/signalfd: \(errnoDescription())") }
    }

    /// Blocks until a connection is queued or a stop is pending, or for at most `milliseconds`
    /// (-1: no limit; 0: only looks); `nil` on an error (`errno`).
    func wait(milliseconds: Int32 = -1) -> Ready? {
        let ready = attest_fcgi_worker_wait(epoll, milliseconds)
        guard ready >= 0 else { return nil }
        return Ready(connection: ready & 1 != 0, stop: ready & 2 != 0)
    }
}
