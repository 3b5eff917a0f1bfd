import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// One LMDB environment (a directory holding `data.mdb` and `lock.mdb`) and the handles of
/// its named databases. Open one per process, after fork.
final class LMDBEnvironment {
    let env: OpaquePointer
    let path: String
    private(set) var handles: [Database: MDB_dbi] = [:]
    /// A read-only transaction kept reset between uses (`mdb_txn_renew` is cheaper than begin).
    private var idleReader: OpaquePointer?

    /// Whether commits store pages through the memory map (`MDB_WRITEMAP`), not `pwrite`.
    let writesThroughMap: Bool

    /// Commits write pages with `pwrite` unless `writeThroughMap` is asked for and the map
    /// can be reserved on disk. A writable map alone is not safe: LMDB extends the file
    /// sparsely, and a store into a page a full disk cannot back is a SIGBUS that kills the
    /// process (found by the fault suite on a full data directory; it was the ephemeral
    /// environment's setting). With every block of the map reserved first
    /// (`attest_reserve_file`: ext4, XFS or tmpfs, which overwrite reserved blocks in place)
    /// no store can need a new block, so a full disk is again only an error from a commit.
    /// Where the reservation fails (another file system, no room, a file already larger than
    /// this process's map: opening would truncate it under the others) it writes with `pwrite`.
    /// `noMetaSync` (`MDB_NOMETASYNC`): a commit syncs its pages but not its meta page; callers
    /// that need the commit durable wait on a `DurabilityBarrier`.
    init(path: String, mapSizeMiB: Int, maxReaders: Int, noSync: Bool, noMetaSync: Bool = false,
         writeThroughMap: Bool = false, databases: [Database]) throws {
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
            throw StoreError(.open, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var created: OpaquePointer?
        try check(mdb_env_create(&created), "mdb_env_create")
        guard let created else { throw StoreError(.open, "mdb_env_create returned nothing") }
        env = created
        self.path = path
        // Held (with its lock) until LMDB has opened the file and sized it to the map.
        let reservation = writeThroughMap ? attest_reserve_file(path + "/data.mdb", Int64(mapSizeMiB) << 20) : -1
        defer { if reservation >= 0 { close(reservation) } }
        writesThroughMap = reservation >= 0
        // Every stored property is set by now: when a step below throws, Swift runs `deinit`,
        // which closes the environment. (A catch that closed it as well was a double free,
        // found by the fault suite: a read-only data directory aborted attestctl.)
        try check(mdb_env_set_maxdbs(env, MDB_dbi(Database.allCases.count + 4)), "mdb_env_set_maxdbs")
        try check(mdb_env_set_mapsize(env, mapSizeMiB << 20), "mdb_env_set_mapsize")
        try check(mdb_env_set_maxreaders(env, UInt32(maxReaders)), "mdb_env_set_maxreaders")
        var flags = UInt32(MDB_NOTLS)
        if noSync { flags |= UInt32(MDB_NOSYNC) }
        if noMetaSync { flags |= UInt32(MDB_NOMETASYNC) }
        if writesThroughMap { flags |= UInt32(MDB_WRITEMAP) }
        try check(mdb_env_open(env, path, flags, 0o600), "opening \(path)")
        var dead: Int32 = 0
        _ = mdb_reader_check(env, &dead)  // clear reader slots of processes that died
        let txn = try beginWrite()
        for db in databases {
            var dbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn, db.rawValue, UInt32(MDB_CREATE), &dbi)
            guard rc == 0 else { mdb_txn_abort(txn); throw storeError(rc, "opening database \(db.rawValue)") }
            handles[db] = dbi
        }
        try check(mdb_txn_commit(txn), "creating databases in \(path)")
    }

    deinit {
        if let idleReader { mdb_txn_abort(idleReader) }
        mdb_env_close(env)
    }

    func handle(_ db: Database) -> MDB_dbi {
        guard let dbi = handles[db] else { preconditionFailure("database \(db.rawValue) is not in \(path)") }
        return dbi
    }

    func beginRead() throws -> OpaquePointer {
        if let txn = idleReader {
            idleReader = nil
            var rc = mdb_txn_renew(txn)
            if rc == MDB_MAP_RESIZED { mdb_env_set_mapsize(env, 0); rc = mdb_txn_renew(txn) }
            guard rc == 0 else { mdb_txn_abort(txn); throw storeError(rc, "renewing a read transaction") }
            return txn
        }
        return try begin(flags: UInt32(MDB_RDONLY))
    }

    func endRead(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        if idleReader == nil { idleReader = txn } else { mdb_txn_abort(txn) }
    }

    func beginWrite() throws -> OpaquePointer { try begin(flags: 0) }

    /// A write transaction nested in `parent` (which it blocks until it ends): committing it
    /// merges its changes into `parent`, aborting it drops them.
    func beginNested(in parent: OpaquePointer) throws -> OpaquePointer {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, parent, 0, &txn), "beginning a nested transaction")
        guard let txn else { throw StoreError(.io, "mdb_txn_begin returned no transaction") }
        return txn
    }

    private func begin(flags: UInt32) throws -> OpaquePointer {
        var txn: OpaquePointer?
        var rc = mdb_txn_begin(env, nil, flags, &txn)
        if rc == MDB_MAP_RESIZED {
            mdb_env_set_mapsize(env, 0)  // another process grew the map: adopt its size
            rc = mdb_txn_begin(env, nil, flags, &txn)
        }
        try check(rc, "beginning a transaction in \(path)")
        guard let txn else { throw StoreError(.io, "mdb_txn_begin returned nothing") }
        return txn
    }

    /// Flushes buffers to disk (used by the interval sync thread and on close).
    func sync() -> Int32 { mdb_env_sync(env, 1) }

    /// Entries in a database.
    func count(_ db: Database, in txn: OpaquePointer) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(txn, handle(db), &stat), "mdb_stat \(db.rawValue)")
        return stat.ms_entries
    }
}

extension LMDBEnvironment {
    /// The id of the last committed write transaction (any process).
    var lastTransactionID: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_last_txnid
    }

    /// (map size, bytes in use) of the environment.
    func usage() -> (mapSize: Int, used: Int) {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(env, &info)
        mdb_env_stat(env, &stat)
        return (info.me_mapsize, (info.me_last_pgno + 1) * Int(stat.ms_psize))
    }
}
