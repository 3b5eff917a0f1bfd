@testable import FastCGI
import Glibc
import Testing

/// A worker holding answers its responder defers (`Responder.deferral`): nothing leaves before
/// it is settled, settled answers leave without waiting, and settling fails them all to 503.
@Suite("held answers") struct HeldAnswersTests {
    /// Answers 200 with a sequence number and defers each answer to that number; what is
    /// settled and how settling goes are the test's to decide.
    final class Ledger {
        var next = 0
        var settledThrough = 0
        var settleCalls: [Int] = []
        var settleFails = false
        /// Positions whose answers left as built (`Deferral.released`), in order.
        var released: [Int] = []
    }

    struct DeferringResponder: Responder {
        let ledger: Ledger
        mutating func respond(to request: Request) -> Response {
            ledger.next += 1
            return .json(200, #"{"n":\#(ledger.next)}"#)
        }
        mutating func deferral() -> Deferral? {
            let (ledger, position) = (ledger, ledger.next)
            return Deferral(position: position, failure: { .json(503, #"{"code":"unavailable"}"#) },
                            released: { ledger.released.append(position) })
        }
        mutating func isSettled(_ position: Int) -> Bool { position <= ledger.settledThrough }
        mutating func settle(_ position: Int) -> Bool {
            ledger.settleCalls.append(position)
            if ledger.settleFails { return false }
            ledger.settledThrough = max(ledger.settledThrough, position)
            return true
        }
    }

    /// A worker, its connection pool and a deferring responder over a fresh listener, with
    /// `requests` clients that have each sent one request; the clients close with it.
    final class Harness {
        let listener = TestListener()
        let clients: [Int32]
        let ledger = Ledger()
        var responder: any Responder
        let pool: ConnectionPool
        let worker: Worker

        init(requests: Int, heldLimit: Int = HeldAnswers<Connection>.defaultLimit) {
            clients = (0..<requests).map { [listener] i in
                let client = listener.connect()
                TestListener.write(client, Records.request([("REQUEST_METHOD", "GET"), ("REQUEST_ID", "r\(i)")]))
                return client
            }
            responder = DeferringResponder(ledger: ledger)
            pool = ConnectionPool(listenFD: listener.fd, maxConnections: 1, heldLimit: heldLimit)
            worker = Worker(listenFD: listener.fd, options: ServerOptions(socketPath: listener.path),
                            log: Log(name: "test"), masterPID: getpid())
        }

        deinit { clients.forEach { close($0) } }

        func serve() -> Worker.Outcome { worker.serveOne(pool, &responder) }
        func settleAll() { pool.settleAll(&responder) }
    }

    /// Whether the worker has written anything to `client` yet (no waiting).
    private func answered(_ client: Int32) -> Bool {
        var entry = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    private func body(_ client: Int32) throws -> String {
        let (bytes, _) = TestListener.readAll(client)
        let records = try #require(Records.replies(bytes))
        return String(decoding: records[0].content, as: UTF8.self)
    }

    @Test("answers wait until settled; a later settlement sends the ones it covers, without a wait")
    func heldUntilSettled() throws {
        let h = Harness(requests: 3)
        let (clients, ledger, pool) = (h.clients, h.ledger, h.pool)

        guard case .served = h.serve() else { Issue.record("expected a request"); return }
        guard case .served = h.serve() else { Issue.record("expected a request"); return }
        #expect(pool.held.count == 2)
        #expect(!answered(clients[0]) && !answered(clients[1]), "nothing leaves before it is settled")

        ledger.settledThrough = 1  // what the next commit's sync would do for the first answer
        guard case .served = h.serve() else { Issue.record("expected a request"); return }
        #expect(answered(clients[0]), "settled by then: sent after the next request")
        #expect(!answered(clients[1]) && !answered(clients[2]))
        #expect(ledger.settleCalls.isEmpty, "no wait so far")
        #expect(ledger.released == [1])

        h.settleAll()
        #expect(ledger.settleCalls == [3], "one wait, for the highest held position")
        #expect(pool.held.isEmpty)
        #expect(ledger.released == [1, 2, 3], "each told once that it left")
        #expect(try body(clients[0]).hasSuffix(#"{"n":1}"#))
        #expect(try body(clients[1]).hasSuffix(#"{"n":2}"#))
        #expect(try body(clients[2]).hasSuffix(#"{"n":3}"#))
        guard case .nothingQueued = h.serve() else { Issue.record("queue should be empty"); return }
    }

    @Test("a stopping worker drains its queue holding no more answers than its limit")
    func drainRespectsTheLimit() throws {
        let h = Harness(requests: 5, heldLimit: 2)
        let drained = h.worker.drain(h.pool, &h.responder)
        #expect(drained == 5)
        #expect(h.ledger.settleCalls == [2, 4, 5], "settled each time 2 were held, then at the end")
        #expect(h.pool.held.isEmpty)
        for (i, client) in h.clients.enumerated() { #expect(try body(client).hasSuffix(#"{"n":\#(i + 1)}"#)) }
    }

    @Test("a failed settlement answers every held request 503 instead")
    func failedSettlement() throws {
        let h = Harness(requests: 2)
        h.ledger.settleFails = true
        _ = h.serve()
        _ = h.serve()
        h.settleAll()
        for client in h.clients {
            let text = try body(client)
            #expect(text.hasPrefix("Status: 503") && text.hasSuffix(#"{"code":"unavailable"}"#), "\(text)")
        }
        #expect(h.ledger.released.isEmpty, "replaced, not released")
    }

    @Test("an answer already settled is sent at once, and the pool reuses connections")
    func settledAtOnce() throws {
        let h = Harness(requests: 2)
        let (clients, ledger, pool) = (h.clients, h.ledger, h.pool)
        ledger.settledThrough = .max
        let first = ObjectIdentifier(pool.current)
        _ = h.serve()
        #expect(answered(clients[0]) && pool.held.isEmpty)
        #expect(ObjectIdentifier(pool.current) == first)
        _ = h.serve()
        #expect(answered(clients[1]))
        #expect(ledger.settleCalls.isEmpty)
        #expect(ledger.released == [1, 2], "sent at once is released too")
    }

    @Test("without holding (one connection), an answer is settled first, then released or replaced")
    func unheldPath() throws {
        for fails in [false, true] {
            let listener = TestListener()
            let client = listener.connect()
            defer { close(client) }
            TestListener.write(client, Records.request([("REQUEST_METHOD", "GET"), ("REQUEST_ID", "r1")]))
            let ledger = Ledger()
            ledger.settleFails = fails
            var responder: any Responder = DeferringResponder(ledger: ledger)
            let connection = Connection(listenFD: listener.fd)
            guard case .request(let params) = connection.accept() else { Issue.record("expected a request"); return }
            let response = Worker.serve(connection, params: params, bodyLimit: 1024, responder: &responder)
            #expect(ledger.settleCalls == [1])
            #expect(response?.status == (fails ? 503 : 200))
            #expect(ledger.released == (fails ? [] : [1]))
        }
    }

    @Test("a settled answer leaves as its deferral's final answer when it has one, built once settled")
    func finalAnswer() {
        var held = HeldAnswers<Int>()
        let ledger = Ledger()
        var responder: any Responder = DeferringResponder(ledger: ledger)
        held.hold(0, .json(200, "{}"), Deferral(position: 9, failure: { .json(503, "{}") },
                                                released: { ledger.released.append(9) },
                                                final: { .json(ledger.settleCalls == [9] ? 409 : 500, "{}") }))
        held.hold(1, .json(200, "{}"), Deferral(position: 4, failure: { .json(503, "{}") }))
        let sent = held.settleAll(&responder)
        #expect(sent.map(\.response.status) == [409, 200])
        #expect(ledger.released == [9])
    }

    @Test("at most the limit are held; one settled position answers those below it",
          arguments: [HeldAnswers<Int>.defaultLimit, 3, 1])
    func limitAndOrder(limit: Int) {
        var held = HeldAnswers<Int>(limit: limit)
        let ledger = Ledger()
        var responder: any Responder = DeferringResponder(ledger: ledger)
        for i in 0..<limit {
            #expect(!held.isFull)
            // Positions out of order: a read-only request awaits an older commit.
            held.hold(i, .json(200, "{}"), Deferral(position: [5, 3, 7, 4][i % 4]) { .json(503, "{}") })
        }
        #expect(held.isFull)
        ledger.settledThrough = 5
        let sent = held.takeSettled(&responder).map(\.slot)
        let unsettled = (0..<limit).filter { $0 % 4 == 2 }
        #expect(sent == (0..<limit).filter { !unsettled.contains($0) }, "5, 3 and 4 are settled; 7 is not")
        #expect(held.count == unsettled.count)
    }

    @Test("a responder's limit is clamped to 1...64")
    func limitBounds() {
        #expect(HeldAnswers<Int>(limit: 0).limit == 1)
        #expect(HeldAnswers<Int>(limit: 1000).limit == HeldAnswers<Int>.maxLimit)
        #expect(HeldAnswers<Int>().limit == 8)
    }
}
