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

    let url: String
    private var conn: OpaquePointer?
    private var prepared: [String: String] = [:]
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

    /// Runs a statement without parameters (BEGIN, COMMIT, DDL).
    func command(_ sql: String) throws {
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        try check(result)
    }

    /// Runs `sql` (prepared on first use) with `parameters`.
    func run(_ sql: String, _ parameters: [Parameter]) throws -> PGResult {
        guard let conn else { throw StoreError(.io, "the database connection is closed") }
        let name = try statement(sql, parameters.count, conn)
        // All parameters in one buffer; text values NUL-terminated; never an empty buffer
        // (a NULL pointer would mean SQL NULL).
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
        let result: OpaquePointer? = blob.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return PQexecPrepared(conn, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        let wrapped = PGResult(result)
        try check(result)
        return wrapped
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
        let state = result.flatMap { PQresultErrorField($0, attest_pg_diag_sqlstate()) }.map { String(cString: $0) } ?? ""
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
