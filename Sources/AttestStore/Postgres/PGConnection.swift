import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection (one per process), with reconnection and a cache of prepared
/// statements.
///
/// Statements are prepared once per connection and run with binary parameters and results:
/// `bytea` travels as raw bytes, counts as 8-byte big-endian integers. After the connection
/// breaks, the next `ensure()` reconnects at once; a failed attempt waits 100 ms, doubling up
/// to 5 s, before the next one, and every call in between fails fast with "unreachable"
/// (the service answers 503 meanwhile).
///
/// Inside a transaction, statements whose answer nobody waits for (the `BEGIN`, the gate's
/// `LOCK`, an upsert) are queued (`begin`, `enqueue`) and go out with the next statement that
/// needs one, or with the `COMMIT`, in one libpq pipeline: one round trip, in order, so a
/// later statement sees what a queued one wrote. A queued statement's failure is thrown by
/// the statement it went out with and, as any failure, aborts the transaction. A query can be
/// queued too (`enqueueQuery`, for reads a transaction knows it will make: `prefetch`): its
/// result is kept when the batch goes out and handed over by `result(_:)`. On a box where
/// a round trip's wake-ups cost tens of µs of CPU on each side, round trips are most of a
/// request's database cost.
final class PGConnection {
    /// A parameter: bytes are sent as binary `bytea`, text as a text-format value the server
    /// types from the statement (a `LIMIT` count).
    enum Parameter {
        case bytes([UInt8])
        case text(String)
    }

    /// A failure from the server or the connection. `sqlState` is PostgreSQL's five-character
    /// code (empty when the connection itself failed).
    struct Failure: Error, CustomStringConvertible {
        let sqlState: String
        let message: String
        /// A conflict with a concurrent transaction: run the transaction again.
        var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
        var description: String { sqlState.isEmpty ? message : "\(message) (SQLSTATE \(sqlState))" }
    }

    /// A statement waiting to go out with the next one (`name`: prepared; else `sql` as is).
    private struct Queued {
        let name: String?
        let sql: String
        let parameters: [Parameter]
        /// A queued query's ticket: its result is kept in `ready` for `result(_:)`.
        var ticket: Int? = nil
    }

    let url: String
    private var conn: OpaquePointer?
    private var prepared: [String: String] = [:]
    private var queued: [Queued] = []
    /// Results of queued queries that went out, by ticket, until taken or the transaction ends.
    private var ready: [Int: PGResult] = [:]
    private var tickets = 0
    /// Between `begin` and `commit` or `rollback`.
    private(set) var inTransaction = false
    /// Whether the transaction's `BEGIN` is still in the queue (nothing of it sent).
    private var beginQueued = false
    /// Round trips to the server so far (tests count them).
    private(set) var roundTrips = 0
    private var retryAt: timespec?
    private var backoffMs = 100
    /// Called after every (re)connection, before any statement: the schema check.
    var onConnect: ((PGConnection) throws -> Void)?

    init(url: String) { self.url = url }

    deinit { if let conn { PQfinish(conn) } }

    var isConnected: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Connects when there is no usable connection, respecting the backoff.
    func ensure() throws {
        if isConnected { return }
        if let conn { PQfinish(conn); self.conn = nil }
        prepared = [:]
        queued = []
        ready = [:]
        inTransaction = false
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        if let retryAt, (now.tv_sec, now.tv_nsec) < (retryAt.tv_sec, retryAt.tv_nsec) {
            throw StoreError(.io, "the database is unreachable (retrying in \(backoffMs) ms at most)")
        }
        let fresh = PQconnectdb(url)
        guard let fresh, PQstatus(fresh) == CONNECTION_OK else {
            let reason = fresh.map { Self.trimmed(PQerrorMessage($0)) } ?? "out of memory"
            if let fresh { PQfinish(fresh) }
            var next = now
            next.tv_nsec += backoffMs % 1000 * 1_000_000
            next.tv_sec += backoffMs / 1000 + next.tv_nsec / 1_000_000_000
            next.tv_nsec %= 1_000_000_000
            retryAt = next
            backoffMs = min(backoffMs * 2, 5000)
            throw StoreError(.io, "cannot reach the database: \(reason)")
        }
        conn = fresh
        retryAt = nil
        backoffMs = 100
        do { try onConnect?(self) } catch {
            PQfinish(fresh)
            conn = nil
            throw error
        }
    }

    /// Runs a statement without parameters (DDL, autocommit statements), outside a transaction
    /// `begin` opened.
    func command(_ sql: String) throws {
        precondition(!inTransaction, "command inside a queued transaction")
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        roundTrips += 1
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        try check(result)
    }

    /// Opens a transaction with `statements` (`BEGIN …`, then e.g. a `LOCK`), queued: they go
    /// out with the transaction's first statement.
    func begin(_ statements: [String]) {
        precondition(!inTransaction && queued.isEmpty, "a transaction opened inside another")
        queued = statements.map { Queued(name: nil, sql: $0, parameters: []) }
        ready = [:]
        inTransaction = true
        beginQueued = true
    }

    /// Commits the transaction `begin` opened, with whatever is still queued.
    func commit() throws {
        defer { inTransaction = false; ready = [:] }
        _ = try send(Queued(name: nil, sql: "COMMIT", parameters: []))
    }

    /// Rolls the transaction back; nothing goes out when none of it has. Failures are
    /// ignored (a broken connection has no transaction left).
    func rollback() {
        let unsent = beginQueued
        queued = []
        ready = [:]
        inTransaction = false
        beginQueued = false
        if !unsent, isConnected { try? command("ROLLBACK") }
    }

    /// Queues `sql` (prepared on first use) with `parameters`, to go out with the next
    /// statement; outside a transaction, runs it now.
    func enqueue(_ sql: String, _ parameters: [Parameter]) throws {
        guard inTransaction else { _ = try run(sql, parameters); return }
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        queued.append(Queued(name: try statement(sql, parameters.count, conn), sql: sql, parameters: parameters))
    }

    /// Queues a query (prepared on first use) whose result the transaction will ask for later,
    /// inside the transaction `begin` opened; returns the ticket for `result(_:)`.
    func enqueueQuery(_ sql: String, _ parameters: [Parameter]) throws -> Int {
        precondition(inTransaction, "a queued query outside a transaction")
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        tickets &+= 1
        queued.append(Queued(name: try statement(sql, parameters.count, conn), sql: sql, parameters: parameters,
                             ticket: tickets))
        return tickets
    }

    /// The result of the query queued as `ticket`: at once when it went out with an earlier
    /// statement, else after sending the queue (one round trip).
    func result(_ ticket: Int) throws -> PGResult {
        if let result = ready.removeValue(forKey: ticket) { return result }
        guard queued.contains(where: { $0.ticket == ticket }) else {
            throw StoreError(.io, "database: the result of a queued query was lost (the transaction ended)")
        }
        _ = try send(nil)
        guard let result = ready.removeValue(forKey: ticket) else {
            throw StoreError(.io, "database: the result of a queued query was lost")
        }
        return result
    }

    /// Queues a statement without parameters whose answer nobody waits for (`SAVEPOINT`,
    /// `RELEASE SAVEPOINT`), inside the transaction `begin` opened.
    func enqueue(command sql: String) {
        precondition(inTransaction, "a queued command outside a transaction")
        queued.append(Queued(name: nil, sql: sql, parameters: []))
    }

    /// Runs `sql` (prepared on first use) with `parameters`, after whatever is queued.
    func run(_ sql: String, _ parameters: [Parameter]) throws -> PGResult {
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        guard let result = try send(Queued(name: try statement(sql, parameters.count, conn), sql: sql,
                                           parameters: parameters)) else {
            throw StoreError(.io, "database: a statement returned no result")
        }
        return result
    }

    /// Sends `last` (nil: nothing more) after the queue, in one round trip, and returns its
    /// result; keeps queued queries' results in `ready`; throws the first failure among them.
    @discardableResult
    private func send(_ last: Queued?) throws -> PGResult? {
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        let batch = queued + (last.map { [$0] } ?? [])
        queued = []
        beginQueued = false
        guard !batch.isEmpty else { return nil }
        roundTrips += 1
        if batch.count == 1, let last {
            let result = Self.withParameters(last.parameters) { n, values, lengths, formats in
                last.name.map { PQexecPrepared(conn, $0, n, values, lengths, formats, 1) }
                    ?? PQexecParams(conn, last.sql, 0, nil, nil, nil, nil, 1)
            }
            let wrapped = PGResult(result)
            try check(result)
            return wrapped
        }
        let results = try pipeline(batch, conn)
        for (item, result) in zip(batch, results) { if let ticket = item.ticket { ready[ticket] = result } }
        return last == nil ? nil : results[results.count - 1]
    }

    /// `batch` in one libpq pipeline: every statement sent, one sync, then each statement's
    /// result read; after a failure the server skips the rest (`PGRES_PIPELINE_ABORTED`). A
    /// connection that breaks the protocol is dropped (the next `ensure()` reconnects).
    private func pipeline(_ batch: [Queued], _ conn: OpaquePointer) throws -> [PGResult] {
        func broken() -> StoreError {
            let error = StoreError(.io, "lost the database connection: \(Self.trimmed(PQerrorMessage(conn)))")
            PQfinish(conn)
            self.conn = nil
            inTransaction = false
            return error
        }
        guard PQenterPipelineMode(conn) == 1 else { throw broken() }
        for item in batch {
            let sent = Self.withParameters(item.parameters) { n, values, lengths, formats in
                item.name.map { PQsendQueryPrepared(conn, $0, n, values, lengths, formats, 1) }
                    ?? PQsendQueryParams(conn, item.sql, 0, nil, nil, nil, nil, 1)
            }
            guard sent == 1 else { throw broken() }
        }
        guard PQpipelineSync(conn) == 1 else { throw broken() }
        var results = [PGResult]()
        for _ in batch {
            // A statement's result, then NULL.
            guard let result = PQgetResult(conn) else { break }
            results.append(PGResult(result))
            while let extra = PQgetResult(conn) { PQclear(extra) }
        }
        var synced = false
        while !synced, let result = PQgetResult(conn) {
            synced = PQresultStatus(result) == PGRES_PIPELINE_SYNC
            PQclear(result)
        }
        guard synced, results.count == batch.count, PQexitPipelineMode(conn) == 1 else { throw broken() }
        for result in results where PQresultStatus(result.result) != PGRES_PIPELINE_ABORTED { try check(result.result) }
        return results
    }

    /// Calls `body` with libpq's parameter arrays for `parameters`: all values in one buffer,
    /// text NUL-terminated, never an empty buffer (a NULL pointer would mean SQL NULL).
    private static func withParameters<R>(_ parameters: [Parameter],
                                          _ body: (Int32, [UnsafePointer<CChar>?], [Int32], [Int32]) -> R) -> R {
        var blob = [UInt8]()
        var offsets = [Int](), lengths = [Int32](), formats = [Int32]()
        for p in parameters {
            offsets.append(blob.count)
            switch p {
            case .bytes(let b): blob += b; lengths.append(Int32(b.count)); formats.append(1)
            case .text(let t): blob += Array(t.utf8); blob.append(0); lengths.append(0); formats.append(0)
            }
        }
        blob.append(0)
        return blob.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            return body(Int32(parameters.count), offsets.map { base + $0 }, lengths, formats)
        }
    }

    private func statement(_ sql: String, _ count: Int, _ conn: OpaquePointer) throws -> String {
        if let name = prepared[sql] { return name }
        let name = "s\(prepared.count)"
        let result = PQprepare(conn, name, sql, Int32(count), nil)
        defer { PQclear(result) }
        try check(result)
        prepared[sql] = name
        return name
    }

    private func check(_ result: OpaquePointer?) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        let state = result.flatMap { PQresultErrorField($0, attest_pg_diag_sqlstate()) }.map { String(cString: $0) }
            ?? ""
        let message = result.flatMap { PQresultErrorField($0, attest_pg_diag_message()) }.map { String(cString: $0) }
            ?? conn.map { Self.trimmed(PQerrorMessage($0)) } ?? "no connection"
        if !isConnected { throw StoreError(.io, "lost the database connection: \(message)") }
        throw Failure(sqlState: state, message: message)
    }

    /// The connection's error text without libpq's trailing newline.
    static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        var s = String(cString: text)
        while s.last == "\n" || s.last == " " { s.removeLast() }
        return s.split(separator: "\n").joined(separator: "; ")
    }
}

/// A statement's result (freed with it).
final class PGResult {
    let result: OpaquePointer?

    init(_ result: OpaquePointer?) { self.result = result }
    deinit { PQclear(result) }

    var rows: Int { Int(PQntuples(result)) }

    /// Rows the statement changed (`INSERT`, `UPDATE`, `DELETE`).
    var affected: Int { PQcmdTuples(result).map { Int(String(cString: $0)) ?? 0 } ?? 0 }

    /// A binary column's bytes.
    func bytes(_ row: Int, _ column: Int) -> [UInt8] {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard length > 0, let value = PQgetvalue(result, Int32(row), Int32(column)) else { return [] }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// A binary `bigint` column.
    func int64(_ row: Int, _ column: Int) -> Int64 {
        Int64(bitPattern: bytes(row, column).reduce(0) { $0 << 8 | UInt64($1) })
    }
}
