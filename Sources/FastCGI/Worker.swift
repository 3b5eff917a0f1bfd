internal import CFastCGI
import Glibc

/// One worker process of a pool: makes its responder, then loops accept → respond → finish
/// until asked to stop. Runs in the child after `fork` and never returns.
///
/// Exit statuses: 0 after a requested stop, 1 when accepting keeps failing,
/// `Worker.responderFailed` (78, `EX_CONFIG`) when `makeResponder` throws.
struct Worker {
    static let responderFailed: Int32 = 78
    /// Consecutive failed accepts (100 ms apart) before the worker gives up and exits.
    static let maxAcceptFailures = 50

    let listenFD: Int32
    let options: ServerOptions
    let log: Log
    let masterPID: pid_t

    func run(_ makeResponder: () throws -> any Responder) -> Never {
        // Still blocked here, inherited from the master: the stop signals stay pending until
        // the responder exists and the handlers are in place. FCGX_Init installs libfcgi's own
        // SIGPIPE and SIGUSR1 handlers, so it goes first and `install` overrides them.
        guard FCGX_Init() == 0 else {
            log("worker cannot start: FCGX_Init failed")
            exit(Self.responderFailed)
        }
        WorkerSignals.install(listenFD: listenFD)
        attest_fcgi_set_parent_death_signal(SIGTERM)
        if getppid() != masterPID { WorkerSignals.requestStop() }

        var responder: any Responder
        do {
            responder = try makeResponder()
        } catch {
            log("worker cannot start: \(error)")
            exit(Self.responderFailed)
        }
        let connection = FCGXConnection(listenFD: listenFD)
        var stopSet = WorkerSignals.stopSet
        var all = sigset_t()
        sigemptyset(&all)
        sigprocmask(SIG_SETMASK, &all, nil)

        var served = 0
        var failures = 0
        while !WorkerSignals.isStopRequested {
            let status = connection.accept()
            if status < 0 {
                if WorkerSignals.isStopRequested { break }
                if status == -EINTR { continue }
                failures += 1
                if failures == 1 || failures == Self.maxAcceptFailures {
                    log("worker accept failed (\(status)): \(status > -200 ? errnoDescription(-status) : "libfcgi error")")
                }
                if failures >= Self.maxAcceptFailures { exit(1) }
                usleep(100_000)
                continue
            }
            failures = 0
            WorkerSignals.deferStop(&stopSet)
            let response = Self.handle(connection, bodyLimit: options.bodyLimit, responder: &responder)
            connection.write(response.serialized())
            connection.finish()
            served += 1
            WorkerSignals.allowStop(&stopSet)
        }
        log("worker stopping after \(served) requests")
        exit(0)
    }

    /// Reads one request from `connection` and asks the responder for its response.
    static func handle(_ connection: FCGXConnection, bodyLimit: Int, responder: inout any Responder) -> Response {
        let params = connection.params()
        let (body, tooLarge) = connection.readBody(contentLength: params["CONTENT_LENGTH"], limit: bodyLimit)
        return responder.respond(to: Request(fastCGIParams: params, body: body, bodyTooLarge: tooLarge))
    }
}
