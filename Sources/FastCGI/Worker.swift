internal import CFastCGI
import Glibc

/// One worker process of a pool: makes its responder, then loops wait → accept → respond →
/// finish until asked to stop. Runs in the child after `fork` and never returns.
///
/// The listening socket is non-blocking and shared by every worker of the pool; each worker
/// waits on it and on its stop signals at once (`WorkerEvents`), and a worker that loses the
/// race for a connection gets `EAGAIN` and waits again. On a stop the worker first serves the
/// connections already queued (at most `maxDrain`): after SIGTERM the master has unlinked the
/// socket, so that queue can only shrink.
///
/// Exit statuses: 0 after a requested stop, 1 when waiting or accepting keeps failing,
/// `Worker.responderFailed` (78, `EX_CONFIG`) when `makeResponder` throws.
struct Worker {
    static let responderFailed: Int32 = 78
    /// Consecutive failures (100 ms apart) before the worker gives up and exits.
    static let maxFailures = 50
    /// Queued connections a stopping worker still serves.
    static let maxDrain = 1024

    let listenFD: Int32
    let options: ServerOptions
    let log: Log
    let masterPID: pid_t

    private enum Outcome { case served, nothingQueued, failed(Int32) }

    func run(_ makeResponder: () throws -> any Responder) -> Never {
        // The master's blocked set is inherited: a stop stays pending until the first wait.
        guard FCGX_Init() == 0 else { fatal("FCGX_Init failed") }
        let events: WorkerEvents
        do {
            events = try WorkerEvents(listenFD: listenFD)
        } catch {
            fatal("\(error)")
        }
        attest_fcgi_set_parent_death_signal(SIGTERM)
        var stop = getppid() != masterPID

        var responder: any Responder
        do {
            responder = try makeResponder()
        } catch {
            fatal("\(error)")
        }
        let connection = FCGXConnection(listenFD: listenFD)

        var served = 0
        var failures = 0
        while !stop {
            guard let ready = events.wait() else {
                failures = backOff(after: failures, "epoll_wait: \(errnoDescription())")
                continue
            }
            stop = ready.stop
            guard ready.connection, !stop else { continue }
            switch serveOne(connection, &responder) {
            case .served: served += 1; failures = 0
            case .nothingQueued: break
            case .failed(let status): failures = backOff(after: failures, "accept failed (\(status))")
            }
        }
        var drained = 0
        while drained < Self.maxDrain, case .served = serveOne(connection, &responder) { drained += 1 }
        log("worker stopping after \(served + drained) requests (\(drained) queued at the stop)")
        exit(0)
    }

    /// Accepts one queued connection, if any, and serves it completely.
    private func serveOne(_ connection: FCGXConnection, _ responder: inout any Responder) -> Outcome {
        let status = connection.accept()
        if status == -EAGAIN || status == -EWOULDBLOCK { return .nothingQueued }
        if status < 0 { return .failed(status) }
        let response = Self.handle(connection, bodyLimit: options.bodyLimit, responder: &responder)
        connection.write(response.serialized())
        connection.finish()
        return .served
    }

    /// Reads one request from `connection` and asks the responder for its response.
    static func handle(_ connection: FCGXConnection, bodyLimit: Int, responder: inout any Responder) -> Response {
        let params = connection.params()
        let (body, tooLarge) = connection.readBody(contentLength: params["CONTENT_LENGTH"], limit: bodyLimit)
        return responder.respond(to: Request(fastCGIParams: params, body: body, bodyTooLarge: tooLarge))
    }

    /// Logs the first and last of a run of failures, pauses 100 ms, and exits after
    /// `maxFailures` in a row (the master then starts a fresh worker).
    private func backOff(after failures: Int, _ message: String) -> Int {
        let count = failures + 1
        if count == 1 || count == Self.maxFailures { log("worker: \(message)") }
        if count >= Self.maxFailures { exit(1) }
        usleep(100_000)
        return count
    }

    private func fatal(_ message: String) -> Never {
        log("worker cannot start: \(message)")
        exit(Self.responderFailed)
    }
}
