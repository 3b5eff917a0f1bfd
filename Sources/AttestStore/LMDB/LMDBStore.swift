import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// The LMDB backend: the data directory's two LMDB environments and their transactions.
///
/// ```
/// <data>/store/durable/    orgs, apps, devices, device_ids, receipts, fingerprints, meta
/// <data>/store/ephemeral/  challenges, rates
/// ```
/// Open one `Store` per process (after fork). Transactions are closures; a write closure that
/// throws aborts everything it wrote. Write transactions on both environments take the
/// ephemeral lock first, then the durable one, everywhere, so they cannot deadlock.
final class LMDBStore: StoreBackend {
    var kind: String { "lmdb" }
    let directory: String
    let options: StoreOptions
    let durable: LMDBEnvironment
    let ephemeral: LMDBEnvironment
    private let syncThread: SyncThread?
    /// When the ephemeral environment was last recreated after a restart (`EphemeralReset`).
    let ephemeralResetAt: Int64
    /// Whether this open recreated it.
    let resetEphemeralOnOpen: Bool
    /// `commit` mode only: where answers wait for the sync that covers them.
    let barrier: DurabilityBarrier?
    /// Open `deferringDurability` scopes, and the highest durable transaction id read or
    /// written in them so far.
    private var deferrals = 0
    private var pendingTxnID = 0

    /// Opens (creating when absent) the store under `directory`.
    init(directory: String, options: StoreOptions) throws {
        self.directory = directory
        self.options = options
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
            throw StoreError(.open, "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let noSync: Bool
        if case .interval = options.sync { noSync = true } else { noSync = false }
        durable = try LMDBEnvironment(path: directory + "/durable", mapSizeMiB: options.durableMapSizeMiB,
                                      maxReaders: options.maxReaders, noSync: noSync, noMetaSync: !noSync,
                                      databases: Database.allCases.filter { $0.environment == .durable })
        let (resetAt, reset) = try EphemeralReset.prepare(store: directory, now: Int64(time(nil)))
        ephemeralResetAt = resetAt
        resetEphemeralOnOpen = reset
        // Every device request writes here (its challenge, its rate windows): through the map,
        // reserved on disk, a commit is memory stores instead of about four `pwrite`s
        // (profile.sh, refresh in interval mode: 6.2 -> 2.0 pwrites and 315-416 -> 277-301 µs
        // of worker CPU per refresh). The durable environment keeps `pwrite`: its map is
        // larger and grows with the devices, and reserving it all would take that disk up front.
        ephemeral = try LMDBEnvironment(path: directory + "/ephemeral", mapSizeMiB: options.ephemeralMapSizeMiB,
                                        maxReaders: options.maxReaders, noSync: true, writeThroughMap: true,
                                        databases: Database.allCases.filter { $0.environment == .ephemeral })
        // Recreated by root (attestctl) in a store the service user owns: the files go to that user.
        if reset {
            FileOwner.match(paths: ["/ephemeral/data.mdb", "/ephemeral/lock.mdb"].map { directory + $0 }, of: directory)
        }
        if case .interval(let ms) = options.sync {
            syncThread = SyncThread(environment: durable, milliseconds: ms)
            barrier = nil
        } else {
            syncThread = nil
            barrier = DurabilityBarrier(environment: durable)
        }
    }

    deinit { syncThread?.stop() }

    /// `interval` mode: stops the background sync after one last sync (as closing does).
    func stopBackgroundSync() { syncThread?.stop() }

    /// Runs `body` in a read-only snapshot. Inside `deferringDurability` the answer waits
    /// until the snapshot is durable, unless `awaitDurable` is false: for reads of what only
    /// a command that waits for its own sync writes (orgs, apps), whose answers change no
    /// state (a challenge).
    func read<T>(awaitDurable: Bool, _ body: (Transaction) throws -> T) throws -> T {
        let txn = LMDBTransaction(durable: durable, ephemeral: ephemeral)
        do {
            let result = try body(Transaction(txn, writable: []))
            try txn.finish(commit: false)
            if awaitDurable { note(txn) }
            return result
        } catch {
            try? txn.finish(commit: false)
            if awaitDurable { note(txn) }
            throw error
        }
    }

    /// Runs `body` in a write transaction on `environments` (both by default) and commits
    /// when it returns; aborts when it throws.
    func write<T>(_ environments: Set<Database.Environment>, _ body: (Transaction) throws -> T) throws -> T {
        let txn = LMDBTransaction(durable: durable, ephemeral: ephemeral)
        do {
            for name in [Database.Environment.ephemeral, .durable] where environments.contains(name) {
                txn.setSlot(name, .writing(try txn.environment(name).beginWrite()))
            }
            let result = try body(Transaction(txn, writable: environments))
            try txn.finish(commit: true)
            barrier?.covered(through: txn.durableSyncedThrough)
            if environments.contains(.durable) { syncThread?.committed() }
            try settle(txn)
            return result
        } catch {
            try? txn.finish(commit: false)
            note(txn)
            throw error
        }
    }

    /// Grouping pays in both modes: in `commit` mode each commit syncs under the writer lock;
    /// in `interval` mode each commit still writes its pages and meta page (`pwrite`) and
    /// takes the writer lock, so a group of 8 makes about a third of the page writes of 8
    /// commits (issue #12: 6.3 against 9.9 per refresh, worker CPU −8%).
    var groupsWrites: Bool { true }

    /// Runs each of `writes` in its own nested transaction (`mdb_txn_begin` with a parent) of
    /// one durable write transaction, and commits that once: one data sync under the writer
    /// lock for all of them. A write that throws is rolled back alone (its nested transaction
    /// aborted) and its error returned in its place. Durability as `write`: the commit is
    /// durable on return, or, inside `deferringDurability`, awaited by the scope.
    func writeBatch(_ writes: [(Transaction) throws -> Void]) throws -> [(any Error)?] {
        guard !writes.isEmpty else { return [] }
        // One `write` (its commit, durability bookkeeping and wait), each write nested in it.
        return try write([.durable]) { batch in
            guard let parent = (batch.engine as? LMDBTransaction)?.durableSlot.txn else {
                throw StoreError(.io, "a grouped write outside an LMDB write transaction")
            }
            return writes.map { write in
                let txn = LMDBTransaction(durable: durable, ephemeral: ephemeral)
                do {
                    txn.setSlot(.durable, .writing(try durable.beginNested(in: parent)))
                    try write(Transaction(txn, writable: [.durable]))
                    try txn.finish(commit: true)  // into the parent
                    return nil
                } catch {
                    try? txn.finish(commit: false)
                    return error
                }
            }
        }
    }

    /// In `commit` mode, a durable write returns once it is durable (see `DurabilityBarrier`),
    /// unless a `deferringDurability` scope is open: then the scope's end waits, once, for
    /// everything it read or wrote.
    private func settle(_ txn: LMDBTransaction) throws {
        guard let barrier else { return }
        note(txn)
        if deferrals == 0 { try barrier.wait(for: pendingTxnID); pendingTxnID = 0 }
    }

    private func note(_ txn: LMDBTransaction) {
        guard barrier != nil else { return }
        pendingTxnID = max(pendingTxnID, txn.durableTxnID)
    }

    /// Runs `body` (one request: its reads, writes and the building of its answer) without
    /// waiting, and returns the highest durable transaction id it read or wrote: in `commit`
    /// mode its answer may leave once `isDurable` says so (or after `awaitDurable`), and not
    /// before. 0 in `interval` mode, and when the request touched nothing durable.
    func deferringDurabilityUnsettled<T>(_ body: () throws -> T) throws -> (result: T, awaits: Int) {
        deferrals += 1
        let result: T
        do { result = try body() } catch { deferrals -= 1; throw error }
        deferrals -= 1
        guard deferrals == 0, barrier != nil else { return (result, 0) }
        let awaits = pendingTxnID
        pendingTxnID = 0
        return (result, awaits)
    }

    /// Whether transaction `position` is known durable, without syncing or waiting.
    func isDurable(_ position: Int) -> Bool {
        guard let barrier, position > 0 else { return true }
        return barrier.isDurable(position)
    }

    /// Returns once transaction `position` is durable: one `fdatasync` covers the request's
    /// commit and those of concurrent requests in every process (see `DurabilityBarrier`).
    /// - Throws: `StoreError(.io)` when the sync fails: the answer must not be sent.
    func awaitDurable(_ position: Int) throws {
        guard let barrier, position > 0 else { return }
        try barrier.wait(for: position)
    }

    /// `fdatasync`s this process made for answers in `commit` mode (tests, benchmarks).
    var durabilitySyncs: Int { barrier?.syncs ?? 0 }

    /// `interval` mode: the `fdatasync`s the background thread made, those that failed, and
    /// how often it woke.
    var backgroundSyncs: (syncs: Int, failures: Int, wakeUps: Int) { syncThread?.counts ?? (0, 0, 0) }
}

extension LMDBStore {
    /// Map size and bytes in use of each environment (how close a `full` error is).
    func usage() -> [(environment: Database.Environment, mapSize: Int, used: Int, throughMap: Bool)] {
        [durable, ephemeral].map { env in
            let usage = env.usage()
            return (env === durable ? .durable : .ephemeral, usage.mapSize, usage.used, env.writesThroughMap)
        }
    }
}

extension LMDBStore {
    /// The id of the durable environment's last committed write transaction, from any
    /// process. Unchanged means nothing durable changed: callers cache reads against it.
    var durableVersion: Int { durable.lastTransactionID }
}

extension LMDBStore {
    /// Writes a compacted, consistent copy of `environment` (one read snapshot) into
    /// `directory` as `data.mdb`, while the store keeps serving (`mdb_env_copy2` with
    /// `MDB_CP_COMPACT`). `directory` must exist and hold no `data.mdb`.
    func copyCompacted(_ environment: Database.Environment, to directory: String) throws {
        let env = environment == .durable ? durable : ephemeral
        try AttestStore.check(mdb_env_copy2(env.env, directory, UInt32(MDB_CP_COMPACT)),
                              "copying \(environment.rawValue) to \(directory)")
    }
}
