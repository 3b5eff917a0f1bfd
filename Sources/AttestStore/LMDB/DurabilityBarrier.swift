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
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        var shared: UnsafeMutablePointer<UInt64>? = nil
        if fd >= 0 {
            Self.matchOwner(fd, of: environment.path + "/data.mdb")
            if ftruncate(fd, 8) == 0, let map = mmap(nil, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), map != MAP_FAILED {
                shared = map.assumingMemoryBound(to: UInt64.self)
            } else {
                close(fd)
                fd = -1
            }
        }
        self.fd = fd
        self.shared = shared
    }

    deinit {
        if let shared { munmap(shared, 8) }
        if fd >= 0 { close(fd) }
    }

    /// Returns once transaction `txnID` (a commit, or the snapshot a read saw) is durable.
    /// - Throws: `StoreError(.io)` when `fdatasync` fails (the answer must not be sent).
    func wait(for txnID: Int) throws {
        if txnID <= known { return }
        if let shared, Int(attest_load_u64(shared)) >= txnID { known = Int(attest_load_u64(shared)); return }
        if fd >= 0 { while flock(fd, LOCK_EX) != 0 && errno == EINTR {} }
        defer { if fd >= 0 { flock(fd, LOCK_UN) } }
        if let shared, Int(attest_load_u64(shared)) >= txnID { known = Int(attest_load_u64(shared)); return }
        // Every meta page up to `last` is written before LMDB publishes `last`; the sync that
        // starts now covers them all.
        let last = environment.lastTransactionID
        let rc = environment.sync()
        syncs += 1
        guard rc == 0 else { throw StoreError(.io, "fdatasync of \(environment.path): \(String(cString: strerror(rc)))", lmdbCode: rc) }
        known = max(known, last)
        if let shared, Int(attest_load_u64(shared)) < last { attest_store_u64(shared, UInt64(last)) }
    }

    /// A file created by root for a data directory that another user owns goes to that user.
    private static func matchOwner(_ fd: Int32, of path: String) {
        var st = stat()
        guard geteuid() == 0, stat(path, &st) == 0, st.st_uid != 0 else { return }
        _ = fchown(fd, st.st_uid, st.st_gid)
    }
}
