import AttestStore
import FastCGI

/// Group commit: in LMDB's `commit` mode every commit makes one data sync under the writer
/// lock, so one commit per request caps durable writes near 1 / sync time for the whole host.
/// A pool worker's responder (`ServiceResponder(holdsAnswers: true)`) therefore answers through
/// this committer: a request's final durable write is queued instead of committed
/// (`RequestScope.durableWrite`), its answer held, the connections already queued served, and
/// when the worker would settle its held answers (nothing queued, `server.maxHeldAnswers` held,
/// or a stop) the queued writes are committed together (`commitGroup`): each in a nested
/// transaction of one write transaction (`Store.writeBatch`), one commit, one sync. Only then
/// does each request's answer get built from its write's result (for validate and refresh: the
/// token is signed then), and leave.
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
///
/// An answer that needs no grouped write but read or wrote something not yet durable is held
/// on that transaction id (`Store.deferringDurabilityUnsettled`), and settled by one
/// `Store.awaitDurable`.
final class GroupCommitter {
    /// The position of an answer awaiting the group's commit: above every transaction id, so
    /// settling it settles every answer held (`HeldAnswers` settles the highest).
    static let groupPosition = Int.max

    let context: ServiceContext
    /// Whether final writes are grouped (`Store.groupsWrites`: a shared commit saves work per
    /// write); otherwise each is committed at once and its answer held on its transaction id.
    let groupsWrites: Bool
    /// Queued writes of held answers, committed together by `commitGroup`.
    private(set) var writeGroup: [GroupedWrite] = []
    /// The last answer `respond` returned unsettled, until the responder takes it.
    private var heldAnswer: HeldAnswer?
    /// The error of the last failed settle, which the held answers' 503s report.
    var settleFailure: (any Error)?

    init(_ context: ServiceContext) {
        self.context = context
        groupsWrites = context.store.groupsWrites
    }

    /// Runs an endpoint body and returns its answer without waiting for its durability: an
    /// answer that awaits a commit is left in `takeHeldAnswer` for the worker to hold.
    func respond(_ request: Request, endpoint: String, _ body: (inout RequestScope) throws -> Response) -> Response {
        var scope = RequestScope(request, endpoint: endpoint, groupsWrites: groupsWrites)
        let context = context
        _ = context.takeRefreshOutcome()
        do {
            let ((response, line), awaits) = try context.store.deferringDurabilityUnsettled {
                context.answer(&scope, body)
            }
            // Counted when the answer leaves, with it (a grouped write's is said by `commitGroup`).
            let outcome = context.takeRefreshOutcome()
            if let queued = scope.queuedWrite {
                // Answered once the group's commit is durable (`commitGroup`); the answer built
                // then keeps this one's headers (the request's rate-limit headers).
                let grouped = GroupedWrite(queued: queued, requestID: scope.requestID, endpoint: endpoint,
                                           headers: response.headers)
                writeGroup.append(grouped)
                heldAnswer = HeldAnswer(awaits: Self.groupPosition, requestID: scope.requestID, endpoint: endpoint,
                                        started: scope.started, status: 0, line: nil, grouped: grouped, outcome: nil)
            } else if awaits > 0 {
                // Logged when the answer leaves (`released`), or replaced by the 503's line.
                heldAnswer = HeldAnswer(awaits: awaits, requestID: scope.requestID, endpoint: endpoint,
                                        started: scope.started, status: response.status, line: line, grouped: nil,
                                        outcome: outcome)
            } else {
                heldAnswer = nil
                if let line { context.log(line.text(us: ServiceContext.monotonicMicroseconds() - scope.started)) }
                ServiceMetrics.request(endpoint: endpoint, status: response.status, started: scope.started)
                ServiceMetrics.refreshOutcome(outcome)
            }
            return response
        } catch {
            _ = context.takeRefreshOutcome()
            return context.failedAfterAnswer(error, scope.requestID, endpoint: endpoint, started: scope.started)
        }
    }

    /// The answer `respond` last left unsettled, once.
    func takeHeldAnswer() -> HeldAnswer? {
        defer { heldAnswer = nil }
        return heldAnswer
    }

    /// Commits the queued writes in one transaction and builds each one's answer. Durable on
    /// return. - Throws: when the commit or its sync failed (the answers must not leave).
    func commitGroup() throws {
        let group = writeGroup
        writeGroup = []
        guard !group.isEmpty else { return }
        let store = context.store
        let context = context
        // Each write says its outcome when it refuses inside the transaction (a blocked lineage);
        // a retried transaction says it again, kept once.
        let writes = group.map { entry in
            { (txn: Transaction) throws in
                _ = context.takeRefreshOutcome()
                defer { entry.outcome = context.takeRefreshOutcome() }
                try entry.queued.write(txn)
            }
        }
        // The commit synced its pages; its meta page may still be on its way. The answers
        // (token signatures) are built meanwhile, and another process's commit often covers
        // the meta page by then, which saves the sync.
        let (outcomes, awaits) = try store.deferringDurabilityUnsettled {
            try store.writeBatch(writes)
        }
        ServiceMetrics.groupCommit(writes: group.count)
        for (entry, failure) in zip(group, outcomes) {
            let result = Result<Response, any Error> {
                if let failure { throw failure }
                return try entry.queued.answer()
            }
            entry.outcome = context.takeRefreshOutcome() ?? entry.outcome
            (entry.answer, entry.line) = context.finished(result, endpoint: entry.endpoint, requestID: entry.requestID,
                                                          headers: entry.headers)
        }
        try context.faults.afterGroupAnswers?()
        try ServiceMetrics.awaitDurable(store, awaits)
    }

    /// Writes a held answer's log line once it leaves (`us` then counts the wait), and counts it
    /// and its refresh outcome (a grouped answer the commit did not build was counted as its 503
    /// by `failedToSettle`, with no outcome).
    func released(_ held: HeldAnswer) {
        if let line = held.grouped?.line ?? held.line {
            context.log(line.text(us: ServiceContext.monotonicMicroseconds() - held.started))
        }
        let status = held.grouped == nil ? held.status : held.grouped?.answer?.status
        if let status {
            ServiceMetrics.request(endpoint: held.endpoint, status: status, started: held.started)
            ServiceMetrics.refreshOutcome(held.grouped?.outcome ?? held.outcome)
        }
    }

    /// The 503 sent instead of a held answer whose durability failed, logged as `respond`
    /// logs its failures (the line the answer would have had is not written).
    func failedToSettle(_ held: HeldAnswer, _ error: any Error) -> Response {
        context.failedAfterAnswer(error, held.requestID, endpoint: held.endpoint, started: held.started)
    }
}

/// An answer `GroupCommitter.respond` left for the worker to hold: the durable position it
/// awaits, what a 503 in its place needs, and its own log line, if any.
struct HeldAnswer {
    let awaits: Int
    let requestID: String
    let endpoint: String
    let started: Int64
    /// The held answer's status (0 for a grouped one: its answer is built by the commit).
    let status: Int
    let line: RequestLogLine?
    /// Set when the answer is built by the group's commit (`GroupCommitter.commitGroup`).
    let grouped: GroupedWrite?
    /// The refresh outcome counted when it leaves (a grouped one's is `grouped.outcome`).
    let outcome: String?
}

/// A queued write in the group, and what its answer needs; `answer` and `line` are set by
/// `commitGroup`.
final class GroupedWrite {
    let queued: QueuedWrite
    let requestID: String
    let endpoint: String
    let headers: [Header]
    var answer: Response?
    var line: RequestLogLine?
    /// The refresh outcome its write or answer reached, counted when the answer leaves.
    var outcome: String?

    init(queued: QueuedWrite, requestID: String, endpoint: String, headers: [Header]) {
        self.queued = queued
        self.requestID = requestID
        self.endpoint = endpoint
        self.headers = headers
    }
}
