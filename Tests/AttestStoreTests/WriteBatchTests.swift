import AttestCore
import AttestStore
import Testing

/// `Store.writeBatch` (group commit): in LMDB's `commit` mode several durable writes share one
/// transaction and one commit, each rolled back alone when it throws.
@Suite struct WriteBatchTests {
    let dir = TemporaryDirectory()
    let now = Timestamp(seconds: 1_790_000_000)

    struct Refused: Error {}

    func open(_ sync: StoreOptions.Sync = .commit) throws -> Store {
        try Store(directory: dir.path + "/store",
                  options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16, sync: sync))
    }

    private func orgs(_ store: Store, _ names: [String]) throws -> [Bool] {
        try store.read { txn in try names.map { try txn.org(named: $0) != nil } }
    }

    @Test func writesShareOneCommitAndAFailingOneIsRolledBackAlone() throws {
        let store = try open()
        #expect(store.groupsWrites)
        let version = store.durableVersion
        let syncs = store.durabilitySyncs
        let outcomes = try store.writeBatch([
            { txn in try txn.put(OrgRecord(name: "a", createdAt: now)) },
            { txn in
                try txn.put(OrgRecord(name: "b", createdAt: now))
                throw Refused()
            },
            { txn in
                // Sees what the writes before it in the group applied.
                guard try txn.org(named: "a") != nil, try txn.org(named: "b") == nil else { throw Refused() }
                try txn.put(OrgRecord(name: "c", createdAt: now))
            },
        ])
        #expect(outcomes.map { $0 == nil } == [true, false, true])
        #expect(outcomes[1] is Refused)
        #expect(try orgs(store, ["a", "b", "c"]) == [true, false, true])
        #expect(store.durableVersion == version + 1, "one commit for the group")
        #expect(store.durabilitySyncs == syncs + 1, "durable on return: one sync")
        #expect(store.isDurable(store.durableVersion))
        let other = try open()
        #expect(try orgs(other, ["a", "c"]) == [true, true], "committed for every process")
    }

    @Test func aGroupWhoseWritesAllFailCommitsNothing() throws {
        let store = try open()
        let version = store.durableVersion
        let outcomes = try store.writeBatch([
            { txn in
                try txn.put(OrgRecord(name: "a", createdAt: now))
                throw Refused()
            },
        ])
        #expect(outcomes[0] is Refused)
        #expect(store.durableVersion == version)
        #expect(try orgs(store, ["a"]) == [false])
    }

    @Test func insideARequestTheScopeAwaitsTheGroupOnce() throws {
        let store = try open()
        let syncs = store.durabilitySyncs
        let (_, awaits) = try store.deferringDurabilityUnsettled {
            _ = try store.writeBatch([{ txn in try txn.put(OrgRecord(name: "a", createdAt: now)) },
                                      { txn in try txn.put(OrgRecord(name: "b", createdAt: now)) }])
        }
        #expect(store.durabilitySyncs == syncs, "no wait inside the scope")
        #expect(awaits == store.durableVersion)
        try store.awaitDurable(awaits)
        #expect(store.isDurable(awaits))
    }

    @Test func inIntervalModeWritesAreGroupedToo() throws {
        let store = try open(.interval(milliseconds: 50))
        #expect(store.groupsWrites, "a commit syncs nothing, but still writes its pages and meta page")
        let version = store.durableVersion
        let outcomes = try store.writeBatch([{ txn in try txn.put(OrgRecord(name: "a", createdAt: now)) },
                                             { _ in throw Refused() },
                                             { txn in try txn.put(OrgRecord(name: "c", createdAt: now)) }])
        #expect(outcomes.map { $0 == nil } == [true, false, true])
        #expect(store.durableVersion == version + 1)
        #expect(try orgs(store, ["a", "c"]) == [true, true])
    }
}
