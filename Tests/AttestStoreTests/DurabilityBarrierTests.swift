import AttestCore
import AttestStore
import Testing

/// `store.sync = commit`: what an answer waits for (`Store.deferringDurability`).
@Suite struct DurabilityBarrierTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    func open(_ sync: StoreOptions.Sync = .commit) throws -> Store {
        try Store(directory: dir.path + "/store",
                  options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16, sync: sync))
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
            // committed, not yet synced
            try other.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
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
            // T, meta not synced
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
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

    // MARK: Held answers (`deferringDurabilityUnsettled`: a worker that answers later)

    @Test func anUnsettledRequestReportsWhatItAwaitsWithoutSyncing() throws {
        let store = try open()
        let before = store.durabilitySyncs
        let (_, awaits) = try store.deferringDurabilityUnsettled {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        #expect(awaits > 0)
        #expect(store.durabilitySyncs == before, "no sync: the wait is left to the caller")
        #expect(!store.isDurable(awaits), "its meta page is not synced yet: the answer must not leave")
        try store.awaitDurable(awaits)
        #expect(store.durabilitySyncs == before + 1)
        #expect(store.isDurable(awaits))
    }

    @Test func theNextCommitSettlesAHeldAnswerWithoutASyncOfItsOwn() throws {
        let store = try open()
        let other = try open()
        let before = store.durabilitySyncs
        let (_, first) = try store.deferringDurabilityUnsettled {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        // The worker serves the next queued request while the first answer is held.
        let (_, second) = try store.deferringDurabilityUnsettled {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "b", createdAt: now)) }
        }
        #expect(second > first)
        #expect(store.isDurable(first), "the second commit's data sync started after the first meta page was written")
        #expect(!store.isDurable(second))
        // Another process's commit settles the second one the same way.
        try other.write([.durable]) { txn in try txn.put(OrgRecord(name: "c", createdAt: now)) }
        #expect(store.isDurable(second), "learned from the shared sync.state")
        #expect(store.durabilitySyncs == before, "neither answer needed a sync of its own")
    }

    @Test func anUnsettledReadAwaitsTheCommitItSaw() throws {
        let store = try open()
        let other = try open()
        let (_, written) = try other.deferringDurabilityUnsettled {
            try other.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        let (_, read) = try store.deferringDurabilityUnsettled { _ = try store.read { try $0.org(named: "a") } }
        #expect(read == written, "an answer built on an unsynced commit awaits that commit")
        #expect(!store.isDurable(read))
        let (_, exempt) = try store.deferringDurabilityUnsettled {
            _ = try store.read(awaitDurable: false) { try $0.org(named: "a") }
        }
        #expect(exempt == 0, "an exempt read awaits nothing")
    }

    @Test func intervalModeHoldsNothing() throws {
        let store = try open(.interval(milliseconds: 10))
        let (_, awaits) = try store.deferringDurabilityUnsettled {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        #expect(awaits == 0)
        #expect(store.isDurable(awaits))
    }

    @Test func intervalModeNeverWaits() throws {
        let store = try open(.interval(milliseconds: 10))
        try store.deferringDurability {
            try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) }
        }
        #expect(store.durabilitySyncs == 0)
    }
}
