import CLMDB

/// An LMDB transaction over both environments, behind a `Transaction` handed to
/// `Store.read` and `Store.write` closures.
///
/// Reads of an environment the transaction did not open for writing begin a read-only
/// transaction on first use. Every value returned is a copy: nothing points into the map
/// after the closure returns.
final class LMDBTransaction: StoreTransaction {
    enum Slot {
        case unused
        case reading(OpaquePointer)
        case writing(OpaquePointer)

        var txn: OpaquePointer? {
            switch self {
            case .unused: return nil
            case .reading(let t), .writing(let t): return t
            }
        }
    }

    let durable: LMDBEnvironment
    let ephemeral: LMDBEnvironment
    var durableSlot = Slot.unused
    var ephemeralSlot = Slot.unused
    /// The durable transaction id this transaction committed or read (0: none), recorded by
    /// `finish`: what an answer built from it must wait for in `commit` mode.
    private(set) var durableTxnID = 0
    /// After a durable commit that wrote (`commit` mode): the id below it, whose meta page,
    /// like every earlier one, was on disk when the commit's own data `fdatasync` returned
    /// (LMDB writes a meta page before it releases the writer lock, and that sync came after).
    /// 0 otherwise.
    private(set) var durableSyncedThrough = 0

    init(durable: LMDBEnvironment, ephemeral: LMDBEnvironment) {
        self.durable = durable
        self.ephemeral = ephemeral
    }

    func environment(_ name: Database.Environment) -> LMDBEnvironment { name == .durable ? durable : ephemeral }

    func slot(_ name: Database.Environment) -> Slot { name == .durable ? durableSlot : ephemeralSlot }

    func setSlot(_ name: Database.Environment, _ slot: Slot) {
        if name == .durable { durableSlot = slot } else { ephemeralSlot = slot }
    }

    func txn(for db: Database, writing: Bool) throws -> (OpaquePointer, MDB_dbi) {
        let envName = db.environment
        let env = environment(envName)
        switch slot(envName) {
        case .writing(let t):
            return (t, env.handle(db))
        case .reading(let t):
            precondition(!writing, "write to \(db.rawValue) in a transaction that only reads \(envName.rawValue)")
            return (t, env.handle(db))
        case .unused:
            precondition(!writing, "write to \(db.rawValue) in a transaction that only reads \(envName.rawValue)")
            let t = try env.beginRead()
            setSlot(envName, .reading(t))
            return (t, env.handle(db))
        }
    }

    /// The value stored under `key`, copied out; `nil` when absent.
    /// Reads are memory here: nothing to send ahead.
    func prefetch(_ db: Database, _ key: [UInt8]) {}
    var prefetches: Bool { false }

    func get(_ db: Database, _ key: [UInt8]) throws -> [UInt8]? {
        let (t, dbi) = try txn(for: db, writing: false)
        return try key.withUnsafeBytes { (k) throws -> [UInt8]? in
            var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
            var mv = MDB_val()
            let rc = mdb_get(t, dbi, &mk, &mv)
            if rc == MDB_NOTFOUND { return nil }
            try check(rc, "reading \(db.rawValue)")
            return Array(UnsafeRawBufferPointer(start: mv.mv_data, count: mv.mv_size))
        }
    }

    /// Stores `value` under `key`. With `noOverwrite`, an existing key is left alone and the
    /// result is `false`.
    func put(_ db: Database, _ key: [UInt8], _ value: [UInt8], noOverwrite: Bool) throws -> Bool {
        let (t, dbi) = try txn(for: db, writing: true)
        return try key.withUnsafeBytes { (k) throws -> Bool in
            try value.withUnsafeBytes { (v) throws -> Bool in
                var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
                var mv = MDB_val(mv_size: v.count, mv_data: UnsafeMutableRawPointer(mutating: v.baseAddress))
                let rc = mdb_put(t, dbi, &mk, &mv, noOverwrite ? UInt32(MDB_NOOVERWRITE) : 0)
                if rc == MDB_KEYEXIST { return false }
                try check(rc, "writing \(db.rawValue)")
                return true
            }
        }
    }

    /// Removes `key`; `false` when it was not there.
    func delete(_ db: Database, _ key: [UInt8]) throws -> Bool {
        let (t, dbi) = try txn(for: db, writing: true)
        return try key.withUnsafeBytes { (k) throws -> Bool in
            var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
            let rc = mdb_del(t, dbi, &mk, nil)
            if rc == MDB_NOTFOUND { return false }
            try check(rc, "deleting from \(db.rawValue)")
            return true
        }
    }

    /// Visits entries in key order from the first key ≥ `start` (or the first key), copies of
    /// key and value each time, until `visit` returns `false` or the database ends.
    func scan(_ db: Database, from start: [UInt8]?,
                     _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        let (t, dbi) = try txn(for: db, writing: false)
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(t, dbi, &cursor), "opening a cursor on \(db.rawValue)")
        defer { mdb_cursor_close(cursor) }
        var mk = MDB_val(), mv = MDB_val()
        var startCopy = start ?? []
        let rc: Int32 = startCopy.withUnsafeMutableBytes { s in
            if start != nil {
                mk = MDB_val(mv_size: s.count, mv_data: s.baseAddress)
                return mdb_cursor_get(cursor, &mk, &mv, MDB_SET_RANGE)
            }
            return mdb_cursor_get(cursor, &mk, &mv, MDB_FIRST)
        }
        try walk(cursor, &mk, &mv, from: rc, step: MDB_NEXT, db, visit)
    }

    /// Visits the cursor's entries from where `rc` left it (0: on an entry), moving by `step`,
    /// until `visit` returns `false` or there are no more.
    private func walk(_ cursor: OpaquePointer?, _ mk: inout MDB_val, _ mv: inout MDB_val, from start: Int32,
                      step: MDB_cursor_op, _ db: Database, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        var rc = start
        while rc == 0 {
            let key = Array(UnsafeRawBufferPointer(start: mk.mv_data, count: mk.mv_size))
            let value = Array(UnsafeRawBufferPointer(start: mv.mv_data, count: mv.mv_size))
            guard try visit(key, value) else { return }
            rc = mdb_cursor_get(cursor, &mk, &mv, step)
        }
        if rc != MDB_NOTFOUND { try check(rc, "scanning \(db.rawValue)") }
    }

    /// Visits entries in descending key order from the last key < `bound`: the cursor is set
    /// on the first key ≥ `bound` (or past the end) and steps back.
    func scanBackward(_ db: Database, before bound: [UInt8], _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
        let (t, dbi) = try txn(for: db, writing: false)
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(t, dbi, &cursor), "opening a cursor on \(db.rawValue)")
        defer { mdb_cursor_close(cursor) }
        var mk = MDB_val(), mv = MDB_val()
        var boundCopy = bound
        var rc: Int32 = boundCopy.withUnsafeMutableBytes { b in
            mk = MDB_val(mv_size: b.count, mv_data: b.baseAddress)
            return mdb_cursor_get(cursor, &mk, &mv, MDB_SET_RANGE)
        }
        rc = rc == 0 ? mdb_cursor_get(cursor, &mk, &mv, MDB_PREV)
            : rc == MDB_NOTFOUND ? mdb_cursor_get(cursor, &mk, &mv, MDB_LAST) : rc
        try walk(cursor, &mk, &mv, from: rc, step: MDB_PREV, db, visit)
    }

    /// The greatest key in `db`, or `nil` when it is empty.
    func lastKey(_ db: Database) throws -> [UInt8]? {
        let (t, dbi) = try txn(for: db, writing: false)
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(t, dbi, &cursor), "opening a cursor on \(db.rawValue)")
        defer { mdb_cursor_close(cursor) }
        var mk = MDB_val(), mv = MDB_val()
        let rc = mdb_cursor_get(cursor, &mk, &mv, MDB_LAST)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "reading the last key of \(db.rawValue)")
        return Array(UnsafeRawBufferPointer(start: mk.mv_data, count: mk.mv_size))
    }

    /// Entries in `db`.
    func count(_ db: Database) throws -> Int {
        let (t, _) = try txn(for: db, writing: false)
        return try environment(db.environment).count(db, in: t)
    }

    /// Deletes up to `limit` of the first entries whose key sorts before `bound` (bytewise,
    /// LMDB's default order), with one cursor from the first key.
    func deleteBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws -> Int {
        let (t, dbi) = try txn(for: db, writing: true)
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(t, dbi, &cursor), "opening a cursor on \(db.rawValue)")
        defer { mdb_cursor_close(cursor) }
        var removed = 0
        var mk = MDB_val(), mv = MDB_val()
        var rc = mdb_cursor_get(cursor, &mk, &mv, MDB_FIRST)
        while rc == 0, removed < limit {
            let key = UnsafeRawBufferPointer(start: mk.mv_data, count: mk.mv_size)
            guard key.lexicographicallyPrecedes(bound) else { break }
            try check(mdb_cursor_del(cursor, 0), "deleting from \(db.rawValue)")
            removed += 1
            // After a delete LMDB leaves the cursor on the following entry; MDB_NEXT returns it.
            rc = mdb_cursor_get(cursor, &mk, &mv, MDB_NEXT)
        }
        if rc != 0 && rc != MDB_NOTFOUND { try check(rc, "deleting from \(db.rawValue)") }
        return removed
    }

    func sweepBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws {
        _ = try deleteBelow(db, bound, limit: limit)
    }

    /// Exact: LMDB has one writer at a time.
    func increment(_ db: Database, _ key: [UInt8]) throws -> UInt32 { try incrementByReadAndWrite(db, key) }

    func append(_ db: Database, _ value: [UInt8]) throws { try appendAfterLastKey(db, value) }

    func insertLater(_ db: Database, _ key: [UInt8], _ value: [UInt8]) throws -> () throws -> Bool {
        try insertNow(db, key, value)
    }

    func finish(commit: Bool) throws {
        // Ephemeral first: a challenge is consumed before the durable change lands, so a crash
        // between the two commits can never let a replay through.
        var firstError: StoreError? = nil
        for name in [Database.Environment.ephemeral, .durable] {
            switch slot(name) {
            case .unused: break
            case .reading(let t):
                if name == .durable { durableTxnID = mdb_txn_id(t) }
                environment(name).endRead(t)
            case .writing(let t):
                if commit && firstError == nil {
                    let id = mdb_txn_id(t)
                    let rc = mdb_txn_commit(t)
                    if rc != 0 { firstError = storeError(rc, "committing \(name.rawValue)") }
                    // A commit that changed nothing writes no meta page: its snapshot (id − 1,
                    // or whatever committed since) is what the caller saw.
                    if name == .durable {
                        durableTxnID = min(id, environment(name).lastTransactionID)
                        if rc == 0 && durableTxnID == id { durableSyncedThrough = id - 1 }
                    }
                } else {
                    if name == .durable { durableTxnID = mdb_txn_id(t) - 1 }
                    mdb_txn_abort(t)
                }
            }
            setSlot(name, .unused)
        }
        if let firstError { throw firstError }
    }
}
