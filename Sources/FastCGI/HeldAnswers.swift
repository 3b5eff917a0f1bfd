/// The answers a worker holds until its responder says they may leave (see `Responder`), each
/// with the slot it goes out on (the worker's `Connection`; anything in tests).
///
/// At most `limit` are held: a worker that reaches it settles them all before it accepts again,
/// so a held answer waits for at most `limit` − 1 other requests and never for an idle queue.
struct HeldAnswers<Slot> {
    /// Eight unless the responder says otherwise (`Responder.heldAnswerLimit`; the service's
    /// `server.maxHeldAnswers`). Answers awaiting a sync are usually settled by the next
    /// request's commit, so one or two are held; answers whose writes wait to be committed
    /// together (the service's group commit) are all settled at once when the limit is reached,
    /// so it is also the largest group: 8 halved the syncs per refresh against 4 (0.33 against
    /// 0.50 with their meta-page sync) and raised refresh throughput 10–25% (issue #12).
    static var defaultLimit: Int { 8 }
    /// Largest accepted limit (each held answer keeps a connection from nginx open).
    static var maxLimit: Int { 64 }

    let limit: Int

    init(limit: Int = defaultLimit) {
        self.limit = min(max(1, limit), Self.maxLimit)
    }

    private var entries: [(slot: Slot, response: Response, deferral: Deferral)] = []

    var isEmpty: Bool { entries.isEmpty }
    var isFull: Bool { entries.count >= limit }
    var count: Int { entries.count }

    mutating func hold(_ slot: Slot, _ response: Response, _ deferral: Deferral) {
        entries.append((slot, response, deferral))
    }

    /// Removes and returns the held answers that are settled now (no waiting), oldest first.
    mutating func takeSettled(_ responder: inout any Responder) -> [(slot: Slot, response: Response)] {
        var settled: [(slot: Slot, response: Response)] = []
        var highest = 0
        entries.removeAll { entry in
            // Positions only settle upwards: one settled position answers every one below it.
            guard entry.deferral.position <= highest || responder.isSettled(entry.deferral.position) else {
                return false
            }
            highest = max(highest, entry.deferral.position)
            settled.append((entry.slot, entry.deferral.leave(entry.response)))
            return true
        }
        return settled
    }

    /// Settles the highest held position (which may wait) and returns every held answer: as
    /// it was, or its failure response when settling failed.
    mutating func settleAll(_ responder: inout any Responder) -> [(slot: Slot, response: Response)] {
        guard let highest = entries.map(\.deferral.position).max() else { return [] }
        let ok = responder.settle(highest)
        let all = entries.map { (slot: $0.slot, response: ok ? $0.deferral.leave($0.response) : $0.deferral.failure()) }
        entries.removeAll()
        return all
    }
}
