/// `Store.check()`: a consistency check of every database, for `attestctl store check`, the
/// fault suite and operators after a crash or a full disk.
///
/// In one read snapshot of both environments, for every database in `Database.allCases`:
/// the entries LMDB counts equal the entries a cursor visits; each record decodes and agrees
/// with the indexes that point at it (`RecordChecks.table`, then `RecordChecks.wholeDatabase`
/// for what one entry cannot look up); index and indexed database
/// have equal counts (`RecordChecks.equalCounts`).
public struct StoreCheckReport: Sendable {
    public struct DatabaseResult: Sendable {
        public let database: Database
        /// Entries LMDB reports (`mdb_stat`).
        public let entries: Int
        /// Whether `RecordChecks.table` has a check for this database (else counted only).
        public let recordsChecked: Bool
        /// Problems found, at most `StoreCheckReport.problemLimit` (see `problemCount`).
        public let problems: [String]
        public let problemCount: Int
    }

    /// Problems listed per database; the rest are only counted.
    public static let problemLimit = 20
    public let databases: [DatabaseResult]
    /// Problems between databases (counts that must agree).
    public let crossProblems: [String]

    public var isConsistent: Bool { crossProblems.isEmpty && databases.allSatisfy { $0.problemCount == 0 } }
}

extension Store {
    public func check() throws -> StoreCheckReport {
        try read { txn in
            var results = [StoreCheckReport.DatabaseResult]()
            var counted = [Database: Int]()
            for db in Database.allCases {
                let entries = try txn.count(db)
                let check = RecordChecks.table[db]
                var problems = [String](), problemCount = 0, visited = 0
                func note(_ found: [String]) {
                    problemCount += found.count
                    problems += found.prefix(StoreCheckReport.problemLimit
                                             - min(problems.count, StoreCheckReport.problemLimit))
                }
                try txn.scan(db) { key, value in
                    visited += 1
                    guard let check else { return true }
                    do { note(try check(key, value, txn)) } catch {
                        note(["\(describe(key)): does not decode: \(error)"])
                    }
                    return true
                }
                if visited != entries { note(["LMDB counts \(entries) entries, a cursor visits \(visited)"]) }
                if let whole = RecordChecks.wholeDatabase[db] {
                    do { note(try whole(txn)) } catch { note(["cannot be checked: \(error)"]) }
                }
                counted[db] = entries
                results.append(.init(database: db, entries: entries, recordsChecked: check != nil, problems: problems,
                                     problemCount: problemCount))
            }
            let cross = RecordChecks.equalCounts.compactMap { a, b in
                counted[a] == counted[b]
                    ? nil : "\(a.rawValue) has \(counted[a] ?? 0) entries, \(b.rawValue) \(counted[b] ?? 0)"
            }
            return StoreCheckReport(databases: results, crossProblems: cross)
        }
    }

    /// A key for a problem line: text when it is printable ASCII, else hex.
    private func describe(_ key: [UInt8]) -> String {
        if !key.isEmpty, key.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return String(decoding: key, as: UTF8.self) }
        return "0x" + key.prefix(40).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
