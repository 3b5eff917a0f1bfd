internal import CFastCGI
import Glibc
import Synchronization

/// How a worker turns SIGTERM/SIGINT into a clean stop without a race.
///
/// The handler (installed with `SA_RESTART`) sets `stopRequested`, tells libfcgi
/// (`FCGX_ShutdownPending`) and closes the worker's copy of the listening socket, once. A
/// worker blocked in `accept(2)` then re-enters the call on a closed descriptor and gets
/// `EBADF`; a worker about to call `accept` gets the same, so there is no window in which a
/// stop can be missed. While a request is being handled the two signals are blocked
/// (`deferStop`), so the request runs to the end and the stop takes effect when
/// `allowStop` unblocks them.
enum WorkerSignals {
    static let stopRequested = Atomic<Bool>(false)
    private static let listenFD = Atomic<Int32>(-1)

    /// The signals that stop a worker.
    static var stopSet: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        return set
    }

    /// Installs the worker's dispositions. Call with the stop signals still blocked.
    static func install(listenFD fd: Int32) {
        listenFD.store(fd, ordering: .sequentiallyConsistent)
        _ = stopRequested.load(ordering: .sequentiallyConsistent)
        attest_fcgi_sigaction(SIGTERM, { _ in WorkerSignals.requestStop() }, 1)
        attest_fcgi_sigaction(SIGINT, { _ in WorkerSignals.requestStop() }, 1)
        // The master reloads on SIGHUP; a terminal hangup must not kill workers mid-request.
        attest_fcgi_sigdisposition(SIGHUP, 1)
        // libfcgi's SIGUSR1 handler means "shut down" and then fails every accept: a stray
        // SIGUSR1 would leave the worker spinning, so it is ignored (after FCGX_Init).
        attest_fcgi_sigdisposition(SIGUSR1, 1)
        attest_fcgi_sigdisposition(SIGPIPE, 1)
        attest_fcgi_sigdisposition(SIGCHLD, 0)
    }

    /// Async-signal-safe: atomics, `close(2)` and libfcgi's flag store only; `errno` is kept.
    static func requestStop() {
        let savedErrno = errno
        if !stopRequested.exchange(true, ordering: .sequentiallyConsistent) {
            FCGX_ShutdownPending()
            let fd = listenFD.exchange(-1, ordering: .sequentiallyConsistent)
            if fd >= 0 { _ = close(fd) }
        }
        errno = savedErrno
    }

    static var isStopRequested: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }

    /// Blocks the stop signals for the duration of one request.
    static func deferStop(_ set: inout sigset_t) { sigprocmask(SIG_BLOCK, &set, nil) }

    /// Unblocks them; a pending stop is handled right here.
    static func allowStop(_ set: inout sigset_t) { sigprocmask(SIG_UNBLOCK, &set, nil) }
}
