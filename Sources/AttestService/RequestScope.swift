import AttestStore
import FastCGI

/// What one request carries from its arrival to its answer: its id, the endpoint's name in the
/// log, when it arrived, the `X-RateLimit-*` headers its answer gets (set where its buckets are
/// charged: `Admission`), and its final durable write when the worker groups them
/// (`durableWrite`). Built by `ServiceContext.respond` or `GroupCommitter.respond` and passed to
/// the endpoint body `inout`: a value on the stack, nothing allocated for it.
struct RequestScope {
    let requestID: String
    let endpoint: String
    /// `ServiceContext.monotonicMicroseconds()` at arrival (the log line's `us` counts from it).
    let started: Int64
    /// Whether the final durable write is queued for the group's commit (a pool worker on a
    /// store where a shared commit saves work per write) rather than committed at once.
    let groupsWrites: Bool
    var rateHeaders: [Header] = []
    /// The final durable write queued by `durableWrite`, which the responder takes.
    var queuedWrite: QueuedWrite?

    init(_ request: Request, endpoint: String, groupsWrites: Bool) {
        requestID = request.requestID
        self.endpoint = endpoint
        started = ServiceContext.monotonicMicroseconds()
        self.groupsWrites = groupsWrites
    }

    /// The request's final durable write, and its answer built from the result: written and
    /// answered at once, or, when the worker `groupsWrites`, queued for the group's commit (the
    /// returned response is then a placeholder the worker never sends; `GroupCommitter` builds
    /// the answer after the commit). `write` must use only the transaction it is given, and the
    /// request must do nothing after this call.
    mutating func durableWrite<T>(_ store: Store, _ write: @escaping (Transaction) throws -> T,
                                  then answer: @escaping (T) throws -> Response) throws -> Response {
        guard groupsWrites else { return try answer(store.write([.durable], write)) }
        let result = ResultBox<T>()
        queuedWrite = QueuedWrite(write: { result.value = try write($0) }, answer: {
            guard let value = result.value else { throw StoreError(.io, "a grouped write left no result") }
            return try answer(value)
        })
        return Response(status: 200)
    }
}

/// A request's final durable write, waiting for the group's commit, and its answer builder.
struct QueuedWrite {
    let write: (Transaction) throws -> Void
    let answer: () throws -> Response
}

private final class ResultBox<T> { var value: T? }
