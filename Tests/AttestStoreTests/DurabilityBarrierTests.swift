import AttestCore
import AttestStore
import Testing

/// `store.sync = commit`: what an answer waits for (`Store.deferringDurability`).
@Suite struct DurabilityBarrierTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    func open(_ sync: StoreOptions.Sync = .commit) throws -> Store {
        try Store(directory: dir.path + "/store", options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16, sync: sync))
    }

    @Test func aWriteOutsideARequestIsSyncedBeforeItReturns() throws {
        let store = try open()
        let before = store.durabilitySyncs
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "acme", createdAt: now)) }
        #expect(store.durabilitySyncs == before + 1, "one fdatasync covers the commit before write returns")
    }

    @Test func aRequestWaitsOnceForAllItsCommits() throws {
        let store = try open()
        let before = store.durabilitySyncs
        try store.deferringDurability {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "b", createdAt: now)) }
            #expect(store.durabilitySyncs == before, "no sync inside the request")
        }
        #expect(store.durabilitySyncs == before + 1, "one sync at the answer covers both commits")
    }

    @Test func aReadOfAnUnsyncedCommitWaitsForIt() throws {
        let store = try open()
        // Another process's commit, not yet covered by a sync this store knows of: simulated
        // by a second store on the same directory committing inside a request of its own.
        let other = try open()
        try other.deferringDurability {
            try other.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        let before = store.durabilitySyncs
        try store.deferringDurability { _ = try store.read { try $0.org(named: "a") } }
        #expect(store.durabilitySyncs == before, "covered by the other store's sync (shared sync.state)")
        try store.deferringDurability { _ = try store.read { try $0.org(named: "a") } }
        #expect(store.durabilitySyncs == before, "still nothing to wait for")
    }

    @Test func aReadOfAnUnsyncedCommitWaitsUnlessExempt() throws {
        let store = try open()
        let other = try open()
        try other.deferringDurability {
            try other.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }  // committed, not yet synced
            let before = store.durabilitySyncs
            try store.deferringDurability { _ = try store.read(awaitDurable: false) { try $0.org(named: "a") } }
            #expect(store.durabilitySyncs == before, "an exempt read (app lookup) does not wait")
            try store.deferringDurability { _ = try store.read { try $0.org(named: "a") } }
            #expect(store.durabilitySyncs == before + 1, "a tracked read waits for the commit it saw")
        }
    }

    @Test func aLaterCommitFromAnotherProcessCoversAnEarlierOne() throws {
        let store = try open()
        let other = try open()
        let before = store.durabilitySyncs, otherBefore = other.durabilitySyncs
        try store.deferringDurability {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }  // T, meta not synced
            // Another process commits T + 1: its data fdatasync runs after T's meta page was written.
            try other.deferringDurability {
                try other.write([.durable]) { txn in try txn.put(OrgRecord(name: "b", createdAt: now)) }
            }
        }
        #expect(store.durabilitySyncs == before, "T was covered by the later commit's own sync")
        #expect(other.durabilitySyncs == otherBefore + 1, "the last commit still needs a sync for its meta page")
    }

    @Test func aWriteThatChangesNothingNeedsNoSync() throws {
        let store = try open()
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        let before = store.durabilitySyncs
        try store.deferringDurability { try store.write([.durable]) { txn in _ = try txn.org(named: "a") } }
        #expect(store.durabilitySyncs == before, "an empty commit waits only for the snapshot it read, already durable")
    }

    @Test func intervalModeNeverWaits() throws {
        let store = try open(.interval(milliseconds: 10))
        try store.deferringDurability {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        #expect(store.durabilitySyncs == 0)
    }
}
