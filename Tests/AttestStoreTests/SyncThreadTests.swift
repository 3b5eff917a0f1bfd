import AttestCore
@testable import AttestStore
import Glibc
import Testing

/// `store.sync = interval`: the background sync (`SyncThread`) runs only after this process
/// committed, and one process's sync spares the others theirs (shared `sync.state`).
/// Two stores on one directory stand for two processes, as in `DurabilityBarrierTests`.
@Suite struct SyncThreadTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    func open(intervalMs: Int) throws -> (Store, LMDBStore) {
        let store = try Store(directory: dir.path + "/store",
                              options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16,
                                                    sync: .interval(milliseconds: intervalMs)))
        return (store, store.backend as! LMDBStore)
    }

    /// Polls `condition` every millisecond for up to 10 s (a loaded box may delay the thread).
    func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            usleep(1_000)
        }
        return condition()
    }

    /// Opening a new store commits its schema marker, which the thread syncs too: waiting
    /// for that sync first keeps it from covering, or following, the test's own commit (on a
    /// loaded box the two commits can fall into one interval or into two).
    func openSettled(intervalMs: Int) throws -> (Store, LMDBStore) {
        let (store, lmdb) = try open(intervalMs: intervalMs)
        #expect(eventually { lmdb.backgroundSyncs.syncs == 1 }, "the schema marker's sync")
        return (store, lmdb)
    }

    @Test func aCommitIsSyncedInTheBackgroundAndReportedDurable() throws {
        let (store, lmdb) = try openSettled(intervalMs: 5)
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        let committed = lmdb.durable.lastTransactionID
        #expect(eventually { lmdb.backgroundSyncs.syncs == 2 }, "one sync after the commit")
        // What another process reads: the shared record now covers the commit.
        let observer = DurabilityBarrier(environment: lmdb.durable)
        #expect(observer.isDurable(committed))
        #expect(lmdb.backgroundSyncs.failures == 0)
    }

    @Test func anIdleStoreDoesNotSync() throws {
        let (store, lmdb) = try openSettled(intervalMs: 1)
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        #expect(eventually { lmdb.backgroundSyncs.syncs == 2 })
        // 200 intervals with nothing committed: before, the thread woke every interval.
        let woken = lmdb.backgroundSyncs.wakeUps
        usleep(200_000)
        #expect(lmdb.backgroundSyncs.syncs == 2, "no sync without a new commit")
        #expect(lmdb.backgroundSyncs.wakeUps - woken <= 1, "asleep (at most the once-a-second sweep)")
        _ = try store.read { try $0.org(named: "a") }
        usleep(20_000)
        #expect(lmdb.backgroundSyncs.syncs == 2, "a read commits nothing")
    }

    @Test func anotherProcessSyncCoversThisProcessCommit() throws {
        // `slow` would sync 10 s after its commit; `fast`'s sync 5 ms after its own covers it.
        let (slow, slowLMDB) = try open(intervalMs: 10_000)
        let (fast, fastLMDB) = try open(intervalMs: 5)
        try slow.write([.durable]) { txn in try txn.put(OrgRecord(name: "slow", createdAt: now)) }
        try fast.write([.durable]) { txn in try txn.put(OrgRecord(name: "fast", createdAt: now)) }
        #expect(eventually { fastLMDB.backgroundSyncs.syncs == 1 })
        // Closing runs the last sync, which finds everything already covered.
        slowLMDB.stopBackgroundSync()
        #expect(slowLMDB.backgroundSyncs.syncs == 0, "covered by the other process's sync")
    }

    @Test func closingSyncsWhatIsPending() throws {
        let (store, lmdb) = try open(intervalMs: 10_000)
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        let committed = lmdb.durable.lastTransactionID
        lmdb.stopBackgroundSync()
        #expect(lmdb.backgroundSyncs.syncs == 1, "the last sync at close")
        #expect(DurabilityBarrier(environment: lmdb.durable).isDurable(committed))
    }
}
