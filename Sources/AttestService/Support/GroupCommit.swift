import AttestStore
import FastCGI

/// Group commit: in LMDB's `commit` mode every commit makes one data sync under the writer
/// lock, so one commit per request caps durable writes near 1 / sync time for the whole host.
/// A pool worker (`holdsAnswers`) therefore queues a request's final durable write instead of
/// committing it (`durableWrite`), holds the answer, serves the connections already queued,
/// and when it would settle its held answers (nothing queued, `server.maxHeldAnswers` held, or
/// a stop) commits the queued writes together (`commitGroup`): each in a nested transaction of
/// one write transaction (`Store.writeBatch`), one commit, one sync. Only then does each
/// request's answer get built from its write's result, and leave.
///
/// In `interval` mode a commit syncs nothing, but it still takes the writer lock and writes
/// its dirty pages and meta page: grouping there saves about a third of a refresh's page
/// writes, and the answer waits only for the group's commit (as it waited for its own).
///
/// On PostgreSQL every durable commit waits for a WAL flush: the group is one serializable
/// transaction (each write after a savepoint), one `COMMIT`, one flush.
///
/// Everything before the final write (parsing, the challenge, admission's ephemeral write,
/// signature checks) runs when the request arrives; a write that fails in the group is rolled
/// back alone and answers as it would have alone. If the group's commit fails, every held
/// answer is a 503 (as a failed sync is). An answer leaves only after the group's commit (in
/// `commit` mode: after it is durable), so docs/storage.md's durability argument holds for it as for
/// any other.
extension ServiceContext {
    /// The position of an answer awaiting the group's commit: above every transaction id, so
    /// settling it settles every answer held (`HeldAnswers` settles the highest).
    static let groupPosition = Int.max

    /// Whether this worker groups durable writes (a pool worker on a store where a shared
    /// commit saves work per write: `Store.groupsWrites`).
    var groupsWrites: Bool { holdsAnswers && store.groupsWrites }

    /// A request's final durable write, and its answer built from the result: written and
    /// answered at once, or, when this worker `groupsWrites`, queued for the group's commit
    /// (the returned response is then a placeholder the worker never sends). `write` must use
    /// only the transaction it is given, and the request must do nothing after this call.
    func durableWrite<T>(_ write: @escaping (Transaction) throws -> T, then answer: @escaping (T) throws -> Response) throws -> Response {
        guard groupsWrites else { return try answer(store.write([.durable], write)) }
        let result = ResultBox<T>()
        queuedWrite = QueuedWrite(write: { result.value = try write($0) }, answer: {
            guard let value = result.value else { throw StoreError(.io, "a grouped write left no result") }
            return try answer(value)
        })
        return Response(status: 200)
    }

    /// Commits the queued writes in one transaction and builds each one's answer. Durable on
    /// return. - Throws: when the commit or its sync failed (the answers must not leave).
    func commitGroup() throws {
        let group = writeGroup
        writeGroup = []
        guard !group.isEmpty else { return }
        // The commit synced its pages; its meta page may still be on its way. The answers
        // (token signatures) are built meanwhile, and another process's commit often covers
        // the meta page by then, which saves the sync.
        let (outcomes, awaits) = try store.deferringDurabilityUnsettled { try store.writeBatch(group.map(\.queued.write)) }
        for (entry, failure) in zip(group, outcomes) {
            (entry.answer, entry.line) = finished(endpoint: entry.endpoint, requestID: entry.requestID, headers: { entry.headers }) {
                if let failure { throw failure }
                return try entry.queued.answer()
            }
        }
        try store.awaitDurable(awaits)
    }

    /// Moves the request's queued write, if any, into the group; its answer, built at the
    /// commit, replaces `placeholder` (whose headers, the request's rate-limit headers, it keeps).
    func groupQueuedWrite(_ request: Request, endpoint: String, placeholder: Response) -> GroupedWrite? {
        guard let queued = queuedWrite else { return nil }
        queuedWrite = nil
        let entry = GroupedWrite(queued: queued, requestID: request.requestID, endpoint: endpoint, headers: placeholder.headers)
        writeGroup.append(entry)
        return entry
    }
}

/// A request's final durable write, waiting for the group's commit, and its answer builder.
struct QueuedWrite {
    let write: (Transaction) throws -> Void
    let answer: () throws -> Response
}

/// A queued write in the group, and what its answer needs; `answer` and `line` are set by
/// `commitGroup`.
final class GroupedWrite {
    let queued: QueuedWrite
    let requestID: String
    let endpoint: String
    let headers: [Header]
    var answer: Response?
    var line: ServiceContext.RequestLogLine?

    init(queued: QueuedWrite, requestID: String, endpoint: String, headers: [Header]) {
        self.queued = queued
        self.requestID = requestID
        self.endpoint = endpoint
        self.headers = headers
    }
}

private final class ResultBox<T> { var value: T? }
