import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// Group durability for `store.sync = commit`: the durable environment commits with
/// `MDB_NOMETASYNC`, and an answer waits here until one `fdatasync` covers what it depends on.
///
/// With `MDB_NOMETASYNC` a commit writes its pages, `fdatasync`s them (inside
/// `mdb_txn_commit`, under the writer lock), then writes its meta page without syncing it;
/// LMDB keeps the database consistent after a power cut but may fall back to the previous
/// meta (lmdb.h: "preserves ACI but not D"). `wait(for: T)` returns once an `fdatasync` that
/// began after the meta page of some transaction ≥ T was written has completed: from then on
/// T is durable (a later meta includes T, and every page it reaches was synced by its own
/// commit). One such sync covers every transaction committed before it, by any process.
/// So does the data `fdatasync` inside every later commit: it starts after the writer lock
/// passed on, so after the earlier meta pages were written. A commit of T therefore reports
/// T − 1 durable (`covered(through:)`), and under concurrent load an answer usually finds
/// its transaction covered by the next commit, from any process, with no sync of its own.
///
/// Shared state, `durable/sync.state` (created next to `data.mdb`, 0600, its owner):
/// ```
/// offset 0  u64 native-endian   highest transaction id known durable
/// ```
/// written only under `flock(LOCK_EX)` on that file, read without it as a fast path. When the
/// file cannot be opened the barrier works alone: same guarantee, no sharing between processes.
final class DurabilityBarrier {
    let environment: LMDBEnvironment
    private let fd: Int32
    private let shared: UnsafeMutablePointer<UInt64>?
    /// Highest transaction id this process knows durable.
    private var known = 0
    /// `fdatasync`s this process made (tests and benchmarks).
    private(set) var syncs = 0

    init(environment: LMDBEnvironment) {
        self.environment = environment
        let path = environment.path + "/sync.state"
        // Not through a link: the store's directory may be another user's (FileOwner).
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        var shared: UnsafeMutablePointer<UInt64>? = nil
        if fd >= 0 && !FileOwner.isPlainFile(fd) {  // a second name of some other file: not ours to write
            close(fd)
            fd = -1
        }
        if fd >= 0 {
            FileOwner.match(fd, of: environment.path + "/data.mdb")
            if ftruncate(fd, 8) == 0, let map = mmap(nil, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
               map != MAP_FAILED {
                shared = map.assumingMemoryBound(to: UInt64.self)
            } else {
                close(fd)
                fd = -1
            }
        }
        self.fd = fd
        self.shared = shared
        resetIfStale()
    }

    /// A reported id above the environment's last transaction is left from another
    /// `data.mdb`: one replaced by a copy that restarts transaction ids (a restored backup, a
    /// compacted copy). Believed, it would report the new file's next commits durable
    /// unsynced, and in `interval` mode nothing would sync until the ids caught up. Reset to 0.
    private func resetIfStale() {
        guard let shared else { return }
        while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
        defer { flock(fd, LOCK_UN) }
        if Int(attest_load_u64(shared)) > environment.lastTransactionID { attest_store_u64(shared, 0) }
    }

    deinit {
        if let shared { munmap(shared, 8) }
        if fd >= 0 { close(fd) }
    }

    /// Returns once transaction `txnID` (a commit, or the snapshot a read saw) is durable.
    /// - Throws: `StoreError(.io)` when `fdatasync` fails (the answer must not be sent).
    func wait(for txnID: Int) throws {
        if isDurable(txnID) { return }
        // A later commit in flight (another process holds the writer lock) syncs the file after
        // our meta page was written: wait for it to end (take and drop the writer lock) and for
        // its process to report it, rather than syncing as well.
        if txnID < environment.lastTransactionID || awaitCommitInFlight(after: txnID) {
            if coveredSoon(txnID) { return }
        }
        try sync(covering: txnID)
    }

    /// `fdatasync`s the environment unless another process reports `txnID` durable meanwhile
    /// (checked under `flock` on `sync.state`, so concurrent callers share one sync), then
    /// reports everything committed before the sync began durable. Used by `wait` and, in
    /// `interval` mode, by the background `SyncThread`.
    /// - Throws: `StoreError(.io)` when `fdatasync` fails.
    func sync(covering txnID: Int) throws {
        if fd >= 0 { while flock(fd, LOCK_EX) != 0 && errno == EINTR {} }
        defer { if fd >= 0 { flock(fd, LOCK_UN) } }
        if reportedDurable(txnID) { return }
        // Every meta page up to `last` is written before LMDB publishes `last`; the sync that
        // starts now covers them all.
        let last = environment.lastTransactionID
        let rc = environment.sync()
        syncs += 1
        guard rc == 0 else {
            throw StoreError(.io, "fdatasync of \(environment.path): \(String(cString: strerror(rc)))", lmdbCode: rc)
        }
        covered(through: last)
    }

    /// Whether `txnID` is known durable (a later commit's data sync, or a sync by any process,
    /// covered it), without waiting.
    func isDurable(_ txnID: Int) -> Bool { txnID <= known || reportedDurable(txnID) }

    /// Whether another process (or an earlier call) reported `txnID` durable in `sync.state`;
    /// learns the reported id.
    private func reportedDurable(_ txnID: Int) -> Bool {
        guard let shared else { return false }
        let reported = Int(attest_load_u64(shared))
        known = max(known, reported)
        return reported >= txnID
    }

    /// Takes and drops the durable environment's writer lock: returns once the write
    /// transaction holding it (if any) has ended; whether one committed after `txnID`.
    private func awaitCommitInFlight(after txnID: Int) -> Bool {
        guard let txn = try? environment.beginWrite() else { return false }
        mdb_txn_abort(txn)
        return environment.lastTransactionID > txnID
    }

    /// Whether a report that `txnID` is durable arrives within a few scheduler yields (the
    /// committing process reports right after `mdb_txn_commit` returns).
    private func coveredSoon(_ txnID: Int) -> Bool {
        guard shared != nil else { return false }
        for _ in 0..<64 {
            if reportedDurable(txnID) { return true }
            sched_yield()
        }
        return false
    }

    /// Records that every transaction up to `txnID` is durable (0: nothing learned).
    func covered(through txnID: Int) {
        guard txnID > known else { return }
        known = txnID
        if let shared { attest_max_u64(shared, UInt64(txnID)) }
    }
}
