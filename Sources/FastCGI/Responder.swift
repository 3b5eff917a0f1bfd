/// The application side of a worker: turns one request into one response.
///
/// Each worker process makes its own responder after `fork` and calls it for one request at a
/// time, so a responder may keep per-process state (open store environments, parsed keys,
/// caches) without locks. `respond` does not throw: a responder maps its own failures to
/// responses. A crash ends the worker process and the master starts a new one.
///
/// Held answers (optional): a response that must not leave before something else happens
/// (the store's commit reaching the disk) says so through `deferral()`. The worker then holds
/// it, serves the connections already queued meanwhile (their work often settles it for free:
/// a later commit's sync covers earlier ones), sends it once `isSettled` is true, and calls
/// `settle` (which may wait) before it would otherwise idle, stop, or hold too many. A
/// responder that never defers (the default) is answered at once, as before.
public protocol Responder {
    mutating func respond(to request: Request) -> Response
    /// The last response's deferral, when it must wait; `nil` (the default): send it now.
    mutating func deferral() -> Deferral?
    /// Whether everything up to `position` is settled, without waiting (default: true).
    mutating func isSettled(_ position: Int) -> Bool
    /// Waits until everything up to `position` is settled; `false` when that failed, and then
    /// every answer held for a position up to it is replaced by its `failure` (default: true).
    mutating func settle(_ position: Int) -> Bool
    /// One short piece of work for a quiet moment (at most a few hundred µs: a request that
    /// arrives meanwhile waits for it), called while nothing is queued and nothing is held,
    /// again as long as it returns true and nothing arrives. Default: nothing to do.
    mutating func idle() -> Bool
    /// Whether `idle` ever has work (default false): a worker whose responder has none never
    /// looks at its queue between requests. Read once, when the worker starts.
    var wantsIdle: Bool { get }
    /// How many answers a worker may hold before it settles them all (default 8, clamped to
    /// 1...64; 1 holds none past the request that made it). Read once, when the worker starts.
    var heldAnswerLimit: Int { get }
}

extension Responder {
    public var heldAnswerLimit: Int { HeldAnswers<Void>.defaultLimit }
    public mutating func deferral() -> Deferral? { nil }
    public mutating func isSettled(_ position: Int) -> Bool { true }
    public mutating func settle(_ position: Int) -> Bool { true }
    public mutating func idle() -> Bool { false }
    public var wantsIdle: Bool { false }
}

/// What a held answer waits for (see `Responder`).
public struct Deferral {
    /// An increasing position (for the store: a transaction id that must become durable).
    public let position: Int
    /// The answer to send instead when settling fails.
    public let failure: () -> Response
    /// Called once when the answer leaves as it was (settled, whether at once or after being
    /// held), e.g. to log it; never for an answer `failure` replaced.
    public let released: () -> Void
    /// The answer to send instead of the held one, built once settled (before `released`):
    /// for a response that depends on what settling did. `nil`: the held one.
    public let final: (() -> Response)?

    public init(position: Int, failure: @escaping () -> Response, released: @escaping () -> Void = {},
                final: (() -> Response)? = nil) {
        self.position = position
        self.failure = failure
        self.released = released
        self.final = final
    }

    /// What leaves once settled: `final`'s answer or `held`, after which `released` runs.
    func leave(_ held: Response) -> Response {
        let response = final?() ?? held
        released()
        return response
    }
}
