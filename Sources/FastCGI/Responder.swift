/// The application side of a worker: turns one request into one response.
///
/// Each worker process makes its own responder after `fork` and calls it for one request at a
/// time, so a responder may keep per-process state (open store environments, parsed keys,
/// caches) without locks. `respond` does not throw: a responder maps its own failures to
/// responses. A crash ends the worker process and the master starts a new one.
public protocol Responder {
    mutating func respond(to request: Request) -> Response
}
