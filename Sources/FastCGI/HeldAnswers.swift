/// The answers a worker holds until its responder says they may leave (see `Responder`), each
/// with the slot it goes out on (the worker's `Connection`; anything in tests).
///
/// At most `limit` are held: a worker that reaches it settles them all before it accepts again,
/// so a held answer waits for at most `limit` other requests and never for an idle queue.
struct HeldAnswers<Slot> {
    /// Four: under load the next request's commit settles the one before, so one or two are
    /// held at a time; the limit bounds the wait when requests that commit nothing come between.
    static var limit: Int { 4 }

    private var entries: [(slot: Slot, response: Response, deferral: Deferral)] = []

    var isEmpty: Bool { entries.isEmpty }
    var isFull: Bool { entries.count >= Self.limit }
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
            guard entry.deferral.position <= highest || responder.isSettled(entry.deferral.position) else { return false }
            highest = max(highest, entry.deferral.position)
            entry.deferral.released()
            settled.append((entry.slot, entry.response))
            return true
        }
        return settled
    }

    /// Settles the highest held position (which may wait) and returns every held answer: as
    /// it was, or its failure response when settling failed.
    mutating func settleAll(_ responder: inout any Responder) -> [(slot: Slot, response: Response)] {
        guard let highest = entries.map(\.deferral.position).max() else { return [] }
        let ok = responder.settle(highest)
        let all = entries.map { entry in
            if ok { entry.deferral.released() }
            return (slot: entry.slot, response: ok ? entry.response : entry.deferral.failure())
        }
        entries.removeAll()
        return all
    }
}
