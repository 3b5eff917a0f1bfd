internal import CFastCGI
import Glibc

/// One worker process of a pool: makes its responder, then loops wait → accept → respond →
/// finish (`Connection`) until asked to stop. Runs in the child after `fork` and never returns.
/// When a request leaves nothing queued behind it, the worker gives its responder short
/// quiet-moment steps (`Responder.idle`) before it blocks again.
///
/// An answer the responder defers (the store's commit must reach the disk first) is held on
/// its connection while the worker serves what is already queued, and sent once settled; a
/// worker never waits on an empty queue, or stops, with answers held (`HeldAnswers`).
///
/// The listening socket is non-blocking and shared by every worker of the pool; each worker
/// waits on it and on its stop signals at once (`WorkerEvents`), and a worker that loses the
/// race for a connection gets `EAGAIN` and waits again. On a stop the worker first serves the
/// connections already queued (at most `maxDrain`), holding answers as it does while running
/// (`drain`): when the pool stops, the master has unlinked the socket, so that queue can only
/// shrink; a worker retired by a reload shares a socket that stays open, so new connections
/// can join it until `maxDrain`.
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

    enum Outcome { case served, dropped, nothingQueued, failed(Int32) }

    func run(_ makeResponder: () throws -> any Responder) -> Never {
        // The master's blocked set is inherited: a stop stays pending until the first wait.
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
        let pool = ConnectionPool(listenFD: listenFD, maxConnections: options.workers,
                                  heldLimit: responder.heldAnswerLimit)

        var served = 0
        var failures = 0
        let wantsIdle = responder.wantsIdle
        var idleWork = wantsIdle
        while !stop {
            if !pool.held.isEmpty {
                // Answers wait for something (their commit reaching the disk): serve the
                // connections already queued meanwhile, whose commits usually settle them; with
                // nothing queued, or too many held, settle them now rather than idle.
                if !pool.held.isFull {
                    switch serveOne(pool, &responder) {
                    case .served: served += 1; failures = 0; idleWork = wantsIdle; continue
                    case .dropped: failures = 0; continue
                    case .nothingQueued, .failed: break
                    }
                }
                pool.settleAll(&responder)
                continue
            }
            // After a request the responder may have quiet-moment work (`Responder.idle`): look
            // without blocking, and do a piece of it only if nothing is queued.
            guard let ready = events.wait(milliseconds: idleWork ? 0 : -1) else {
                failures = backOff(after: failures, "epoll_wait: \(errnoDescription())")
                continue
            }
            stop = ready.stop
            if idleWork, !ready.connection, !stop {
                idleWork = responder.idle()
                continue
            }
            guard ready.connection, !stop else { continue }
            switch serveOne(pool, &responder) {
            case .served: served += 1; failures = 0; idleWork = wantsIdle
            case .dropped: failures = 0
            case .nothingQueued: break
            case .failed(let code): failures = backOff(after: failures, "accept: \(errnoDescription(code))")
            }
        }
        let drained = drain(pool, &responder)
        log("worker stopping after \(served + drained) requests (\(drained) queued at the stop)")
        exit(0)
    }

    /// A stopping worker's last work: serves the connections queued (at most `maxDrain`),
    /// settling its held answers whenever as many are held as it may hold, as it does while
    /// running, and at the end; how many connections it took. Without the settling on the
    /// way, every answer would wait for the whole queue, and a SIGKILL at the end of the
    /// grace period would lose them all at once.
    func drain(_ pool: ConnectionPool, _ responder: inout any Responder) -> Int {
        var drained = 0
        drain: while drained < Self.maxDrain {
            if pool.held.isFull { pool.settleAll(&responder) }
            switch serveOne(pool, &responder) {
            case .served, .dropped: drained += 1
            case .nothingQueued, .failed: break drain
            }
        }
        pool.settleAll(&responder)
        return drained
    }

    /// Accepts one queued connection, if any, and answers it, or holds its answer (see
    /// `Responder`); then sends the held answers that are settled now. A connection dropped
    /// without a request (a peer that broke the protocol or stalled) is logged, not counted
    /// as a failure: only accept's own errors lead to the back-off.
    func serveOne(_ pool: ConnectionPool, _ responder: inout any Responder) -> Outcome {
        let connection = pool.current
        switch connection.accept() {
        case .nothingQueued: return .nothingQueued
        case .failed(let code): return .failed(code)
        case .dropped(let error):
            if let error { log("dropped a connection without answering: \(error)") }
            return .dropped
        case .request(let params):
            guard let response = Self.answer(connection, params: params, bodyLimit: options.bodyLimit,
                                             responder: &responder) else {
                connection.endAborted()
                return .dropped
            }
            let deferral = responder.deferral()
            if let deferral, !responder.isSettled(deferral.position) {
                pool.hold(response, deferral)
            } else {
                Self.send(deferral?.leave(response) ?? response, on: connection)
            }
            pool.sendSettled(&responder)
            return .served
        }
    }

    /// Reads the body of an accepted request, asks the responder and writes its response,
    /// settling first what it waits for (`SingleConnection`: no holding); `nil` when the web
    /// server aborted the request meanwhile (nothing answered).
    @discardableResult
    static func serve(_ connection: Connection, params: Params, bodyLimit: Int,
                      responder: inout any Responder) -> Response? {
        guard var response = answer(connection, params: params, bodyLimit: bodyLimit, responder: &responder) else {
            connection.endAborted()
            return nil
        }
        if let deferral = responder.deferral() {
            response = responder.settle(deferral.position) ? deferral.leave(response) : deferral.failure()
        }
        send(response, on: connection)
        return response
    }

    /// Reads the body of an accepted request and asks the responder; `nil`, without asking,
    /// when the web server aborted the request while its body was read.
    static func answer(_ connection: Connection, params: Params, bodyLimit: Int,
                       responder: inout any Responder) -> Response? {
        let (body, tooLarge) = connection.readBody(contentLength: params["CONTENT_LENGTH"], limit: bodyLimit)
        guard !connection.aborted else { return nil }
        return responder.respond(to: Request(fastCGIParams: params, body: body, bodyTooLarge: tooLarge))
    }

    /// Writes `response` and closes the connection.
    static func send(_ response: Response, on connection: Connection) {
        connection.respond(response.serialized())
        connection.finish()
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
