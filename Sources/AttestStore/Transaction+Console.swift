import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// Console sign-in links, console sessions and the organization audit log.
///
/// ```
/// console_logins    SHA-256(token) (32)                     → ConsoleLoginRecord
/// console_sessions  session id (16)                         → ConsoleSessionRecord
/// audit_log         org ‖ 0x00 ‖ at i64 BE ‖ sequence u64 BE → AuditRecord
/// audit_counts      org                                     → u64 BE: the entries audit_log holds for it
/// ```
extension Transaction {
    // MARK: sign-in links

    public func put(_ login: ConsoleLoginRecord, tokenHash: [UInt8]) throws {
        try put(.consoleLogins, tokenHash, login.encoded())
    }

    /// Takes the link whose token hashes to `tokenHash`: returns it and deletes it (a link
    /// works once); nil for an unknown (or already used) one. An expired link is deleted too,
    /// and returned for the caller to refuse.
    public func takeConsoleLogin(tokenHash: [UInt8]) throws -> ConsoleLoginRecord? {
        guard let bytes = try get(.consoleLogins, tokenHash) else { return nil }
        let login = try ConsoleLoginRecord(encoded: bytes)
        _ = try delete(.consoleLogins, tokenHash)
        return login
    }

    /// Every unused link with its key, for `console sessions` and the sweep.
    public func consoleLogins() throws -> [(hash: [UInt8], login: ConsoleLoginRecord)] {
        var found = [([UInt8], ConsoleLoginRecord)]()
        try scan(.consoleLogins) { key, value in
            found.append((key, try ConsoleLoginRecord(encoded: value)))
            return true
        }
        return found
    }

    // MARK: sessions

    public func consoleSession(id: [UInt8]) throws -> ConsoleSessionRecord? {
        guard id.count == 16, let bytes = try get(.consoleSessions, id) else { return nil }
        var record = try ConsoleSessionRecord(encoded: bytes)
        record.id = id
        return record
    }

    public func put(_ session: ConsoleSessionRecord) throws {
        guard session.id.count == 16 else {
            throw StoreError(.invalidKey, "a console session id of \(session.id.count) bytes")
        }
        try put(.consoleSessions, session.id, session.encoded())
    }

    /// Every session kept (live, ended or expired), in id order.
    public func consoleSessions() throws -> [ConsoleSessionRecord] {
        var found = [ConsoleSessionRecord]()
        try scan(.consoleSessions) { key, value in
            var record = try ConsoleSessionRecord(encoded: value)
            record.id = key
            found.append(record)
            return true
        }
        return found
    }

    /// Deletes sessions and links expired before `now - keepSeconds` (a session is kept a
    /// while after it ends, for `console sessions`); returns how many went.
    @discardableResult
    public func sweepConsole(now: Timestamp, keepSeconds: Int64) throws -> Int {
        var gone = 0
        for s in try consoleSessions() where s.expiresAt.seconds + keepSeconds < now.seconds {
            if try delete(.consoleSessions, s.id) { gone += 1 }
        }
        for (hash, l) in try consoleLogins() where l.expiresAt.seconds + keepSeconds < now.seconds {
            if try delete(.consoleLogins, hash) { gone += 1 }
        }
        return gone
    }

    // MARK: audit log

    /// Appends `entry` to `org`'s log. Then drops up to 16 of the org's oldest entries that are
    /// older than `retainAfter` or beyond the newest `keep` (the log's bounds, paid by the
    /// writes that grow it; a log over its bound shrinks by up to 15 a write).
    public func appendAudit(_ entry: AuditRecord, org: String, retainAfter: Timestamp? = nil,
                            keep: Int = .max) throws {
        let prefix = try Self.auditPrefix(org)
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var sequence = UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
        // Two entries of one transaction in the same nanosecond: the next free sequence.
        while try get(.auditLog, Self.auditKey(prefix, entry.at, sequence)) != nil { sequence &+= 1 }
        try put(.auditLog, Self.auditKey(prefix, entry.at, sequence), entry.encoded())
        var count = try auditCount(org: org) + 1
        var old = [[UInt8]]()
        try scan(.auditLog, from: prefix) { key, _ in
            guard key.starts(with: prefix), old.count < 16, let at = Self.auditTime(key, prefix: prefix) else {
                return false
            }
            let expired = retainAfter.map { at < $0.seconds } ?? false
            guard expired || count - UInt64(old.count) > UInt64(max(keep, 1)) else { return false }
            old.append(key)
            return true
        }
        for key in old where try delete(.auditLog, key) { count -= 1 }
        var value = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { value[i] = UInt8(truncatingIfNeeded: count >> UInt64(56 - 8 * i)) }
        try put(.auditCounts, Array(org.utf8), value)
    }

    /// How many entries `org`'s log holds.
    public func auditCount(org: String) throws -> UInt64 {
        guard let v = try get(.auditCounts, Array(org.utf8)) else { return 0 }
        guard v.count == 8 else { throw StoreError(.corrupt, "an audit count of \(v.count) bytes") }
        return v.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// `org`'s entries newest first, at most `limit`, older than the cursor `before`
    /// (`(at, sequence)` of the last entry of the previous page; nil: from the newest).
    public func auditEntries(org: String, before: (at: Int64, sequence: UInt64)? = nil,
                             limit: Int) throws -> [AuditRecord] {
        let prefix = try Self.auditPrefix(org)
        let bound = before.map { Self.auditKey(prefix, Timestamp(seconds: $0.at), $0.sequence) }
            ?? prefix.dropLast() + [1]
        var found = [AuditRecord]()
        try scanBackward(.auditLog, before: bound) { key, value in
            guard key.starts(with: prefix), found.count < limit else { return false }
            var entry = try AuditRecord(encoded: value)
            entry.sequence = key.suffix(8).reduce(0) { $0 << 8 | UInt64($1) }
            found.append(entry)
            return true
        }
        return found
    }

    static func auditPrefix(_ org: String) throws -> [UInt8] {
        guard !org.isEmpty, !org.utf8.contains(0) else {
            throw StoreError(.invalidKey, "an organization name that is empty or holds 0x00")
        }
        return Array(org.utf8) + [0]
    }

    static func auditKey(_ prefix: [UInt8], _ at: Timestamp, _ sequence: UInt64) -> [UInt8] {
        var key = prefix
        key.reserveCapacity(prefix.count + 16)
        let s = UInt64(bitPattern: at.seconds)
        for shift in stride(from: 56, through: 0, by: -8) { key.append(UInt8(truncatingIfNeeded: s >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) {
            key.append(UInt8(truncatingIfNeeded: sequence >> UInt64(shift)))
        }
        return key
    }

    static func auditTime(_ key: [UInt8], prefix: [UInt8]) -> Int64? {
        guard key.count == prefix.count + 16 else { return nil }
        return Int64(bitPattern: key[prefix.count..<prefix.count + 8].reduce(0) { $0 << 8 | UInt64($1) })
    }
}
