/// A worker's connections: the one it accepts on, those whose answers it holds, and spares.
final class ConnectionPool {
    private let listenFD: Int32
    private let maxConnections: Int
    private(set) var current: Connection
    private(set) var held: HeldAnswers<Connection>
    private var spares: [Connection] = []

    init(listenFD: Int32, maxConnections: Int, heldLimit: Int = HeldAnswers<Connection>.defaultLimit) {
        self.listenFD = listenFD
        self.maxConnections = maxConnections
        held = HeldAnswers(limit: heldLimit)
        current = Connection(listenFD: listenFD, maxConnections: maxConnections)
    }

    /// Holds `response` on the current connection; the next accept uses another.
    func hold(_ response: Response, _ deferral: Deferral) {
        held.hold(current, response, deferral)
        current = spares.popLast() ?? Connection(listenFD: listenFD, maxConnections: maxConnections)
    }

    /// Sends the held answers that are settled now.
    func sendSettled(_ responder: inout any Responder) {
        guard !held.isEmpty else { return }
        release(held.takeSettled(&responder))
    }

    /// Settles (waiting if need be) and sends every held answer.
    func settleAll(_ responder: inout any Responder) {
        release(held.settleAll(&responder))
    }

    private func release(_ answers: [(slot: Connection, response: Response)]) {
        for (connection, response) in answers {
            Worker.send(response, on: connection)
            spares.append(connection)
        }
    }
}
