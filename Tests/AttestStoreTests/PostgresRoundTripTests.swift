import AttestCore
@testable import AttestStore
import Foundation
import Testing

/// PostgreSQL only: what a transaction sends in one round trip (`PGConnection`'s queue). A
/// write's `BEGIN` (and the gate's `LOCK`) go out with its first query and its upserts with
/// the next statement or the `COMMIT`, in order, and a queued statement that fails still
/// fails the write and leaves nothing behind.
@Suite(.enabled(if: StoreConformance.kinds.contains(.postgres), "needs ATTEST_TEST_POSTGRES_URL"))
struct PostgresRoundTripTests {
    /// A fresh PostgreSQL store (its schema lives as long as the fixture) and its connection.
    static func open() throws -> (StoreConformance.Fixture, Store, PGConnection) {
        let f = try StoreConformance.Fixture(.postgres)
        let store = try f.open()
        _ = try store.read { try $0.get(.meta, [0]) }
        let connection = try #require((store.backend as? PostgresStore)?.connection)
        return (f, store, connection)
    }

    /// Adds a `CHECK` to the fixture's own `table`: a value of 8 bytes or more fails on the server.
    static func refuseLongValues(in table: String, of f: StoreConformance.Fixture) throws {
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        try admin.command(
            "ALTER TABLE \(try #require(f.schemaName)).\(table) ADD CONSTRAINT short CHECK (length(v) < 8)")
    }

    /// Round trips `body` costs on `connection`.
    static func roundTrips(_ connection: PGConnection, _ body: () throws -> Void) rethrows -> Int {
        let before = connection.roundTrips
        try body()
        return connection.roundTrips - before
    }

    @Test func aWriteSendsBeginWithItsFirstQueryAndUpsertsWithTheCommit() throws {
        let (fixture, store, connection) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        let trips = try Self.roundTrips(connection) {
            try store.write { txn in
                #expect(try txn.get(.meta, [1]) == nil)
                try txn.put(.meta, [1], [10])
                try txn.put(.meta, [2], [20])
            }
        }
        #expect(trips == 2, "BEGIN + LOCK + SELECT, then two upserts + COMMIT")
        #expect(try store.read { [try $0.get(.meta, [1]), try $0.get(.meta, [2])] } == [[10], [20]])
        #expect(try Self.roundTrips(connection) { try store.write { _ in } } == 1,
                "an empty write: BEGIN + LOCK + COMMIT")
        #expect(try Self.roundTrips(connection) { _ = try store.read { try $0.get(.meta, [1]) } } == 2,
                "a read: BEGIN + SELECT, COMMIT")
    }

    @Test func prefetchedReadsShareOneRoundTrip() throws {
        let (fixture, store, connection) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        try store.write { txn in for i: UInt8 in 1...3 { try txn.put(.meta, [i], [i * 10]) } }
        var seen = [[UInt8]?]()
        let trips = try Self.roundTrips(connection) {
            try store.write { txn in
                for i: UInt8 in 1...4 { txn.prefetch(.meta, [i]) }
                txn.prefetch(.meta, [1])
                seen = try (1...4).map { try txn.get(.meta, [UInt8($0)]) }
                try txn.put(.meta, [4], [40])
            }
        }
        #expect(seen == [[10], [20], [30], nil], "a prefetched absent key reads as absent; prefetching twice is once")
        #expect(trips == 2, "BEGIN + LOCK + four SELECTs, then the upsert + COMMIT")
        // A prefetched key that is not read costs nothing more, and is dropped with the transaction.
        #expect(try Self.roundTrips(connection) { try store.write { txn in txn.prefetch(.meta, [9]) } } == 1)
    }

    /// A write between a key's prefetch and its `get` wins: the `get` sees it, not the
    /// prefetched value; so does a write to any key of the database (`deleteBelow`).
    @Test func aWriteAfterAPrefetchIsSeenByTheRead() throws {
        let (fixture, store, _) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        try store.write { txn in try txn.put(.meta, [1], [1]); try txn.put(.meta, [2], [2]) }
        let seen = try store.write { txn -> [[UInt8]?] in
            txn.prefetch(.meta, [1])
            txn.prefetch(.meta, [2])
            txn.prefetch(.meta, [5])
            txn.prefetch(.meta, [6])
            try txn.put(.meta, [5], [50])
            _ = try txn.put(.meta, [6], [60], noOverwrite: true)
            let rewritten = [try txn.get(.meta, [5]), try txn.get(.meta, [6])]
            try txn.put(.meta, [1], [7])
            try txn.deleteBelow(.meta, [3], limit: 1)
            return rewritten + [try txn.get(.meta, [1]), try txn.get(.meta, [2])]
        }
        #expect(seen == [[50], [60], nil, [2]], """
            [5] and [6] were written after their prefetch; \
            [1] was rewritten, then deleted as the first key below [3]
            """)
    }

    /// A step of a group rolled back to its savepoint drops what was prefetched: a result read
    /// after the step's own write would hold what the rollback undid.
    @Test func aRolledBackStepForgetsItsPrefetches() throws {
        let (fixture, store, _) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        try store.write { txn in try txn.put(.meta, [1], [1]) }
        var second: [UInt8]?
        let outcomes = try store.writeBatch([
            { txn in
                try txn.put(.meta, [1], [99])
                txn.prefetch(.meta, [1])
                throw Refused()
            },
            { txn in second = try txn.get(.meta, [1]) },
        ])
        #expect(outcomes[0] is Refused && outcomes[1] == nil)
        #expect(second == [1], "the first step's write was rolled back")
    }

    @Test func aQueryAfterAQueuedUpsertSeesIt() throws {
        let (fixture, store, _) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        let seen = try store.write { txn -> [[UInt8]?] in
            try txn.put(.meta, [1], [1])
            try txn.put(.meta, [1], [2])
            return [try txn.get(.meta, [1]), try txn.put(.meta, [1], [3], noOverwrite: true) ? [0] : nil]
        }
        #expect(seen == [[2], nil], "the later upsert won, and the single insert saw the row")
        #expect(try store.read { try $0.get(.meta, [1]) } == [2])
    }

    /// A `CHECK` on the test's own table makes one upsert fail on the server.
    @Test func aQueuedUpsertThatFailsFailsTheWriteAndLeavesNothing() throws {
        let (f, store, connection) = try Self.open()
        defer { withExtendedLifetime(f) {} }
        try Self.refuseLongValues(in: "ae_orgs", of: f)
        // Failing at the COMMIT it went out with.
        #expect(throws: StoreError.self) {
            try store.write { txn in
                try txn.put(.orgs, [1], [1])
                try txn.put(.orgs, [2], Array(repeating: 9, count: 20))
            }
        }
        // Failing at the query it went out with, which the closure sees throw.
        var queryFailed = false
        #expect(throws: StoreError.self) {
            try store.write { txn in
                try txn.put(.orgs, [3], Array(repeating: 9, count: 20))
                do { _ = try txn.get(.orgs, [3]) } catch { queryFailed = true; throw error }
            }
        }
        #expect(queryFailed)
        #expect(try store.read { [try $0.get(.orgs, [1]), try $0.get(.orgs, [2]), try $0.get(.orgs, [3])] }
                    == [nil, nil, nil])
        // The connection is usable again: no pipeline or aborted transaction left over.
        _ = try store.write { txn in try txn.put(.orgs, [4], [4]) }
        #expect(try store.read { try $0.get(.orgs, [4]) } == [4])
        // A write whose closure throws before any query sends nothing at all.
        struct Stop: Error {}
        let before = connection.roundTrips
        #expect(throws: Stop.self) { try store.write { _ -> Int in throw Stop() } }
        #expect(connection.roundTrips == before)
    }

    @Test func anIncrementIsOneStatement() throws {
        let (fixture, store, connection) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        _ = try store.write([.ephemeral]) { try $0.increment(.rates, [1]) }
        let before = connection.roundTrips
        #expect(try store.write([.ephemeral]) { try $0.increment(.rates, [1]) } == 2)
        #expect(connection.roundTrips - before == 2, "BEGIN + the upsert, COMMIT")
    }

    @Test func aLaterInsertGoesOutWithTheNextStatement() throws {
        let (fixture, store, connection) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        let before = connection.roundTrips
        let fresh = try store.write([.ephemeral]) { txn -> Bool in
            let consumed = try txn.consumeChallengeLater(id: [1], expiry: 100)
            _ = try txn.hitRateWindow("org:acme", windowEnd: 60)
            return try consumed()
        }
        #expect(fresh)
        #expect(connection.roundTrips - before == 2, "BEGIN + the insert + the upsert, COMMIT")
        #expect(try store.write([.ephemeral]) { try $0.consumeChallengeLater(id: [1], expiry: 100)() } == false,
                "alone, it goes out when its outcome is asked for")
    }
}

/// Group commit on PostgreSQL (`PostgresStore.writeBatch`): a worker's final writes in one
/// serializable transaction, each between a savepoint and its release.
extension PostgresRoundTripTests {
    struct Refused: Error {}

    @Test func aGroupSharesOneCommitAndAFailingWriteIsRolledBackAlone() throws {
        let (fixture, store, connection) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        #expect(store.groupsWrites)
        let backend = try #require(store.backend as? PostgresStore)
        let commits = backend.writes, trips = connection.roundTrips
        let outcomes = try store.writeBatch([
            { txn in try txn.put(.meta, [1], [1]) },
            { txn in
                try txn.put(.meta, [2], [2])
                throw Refused()
            },
            { txn in
                // Sees what the writes before it applied, and not what was rolled back.
                guard try txn.get(.meta, [1]) == [1], try txn.get(.meta, [2]) == nil else { throw Refused() }
                try txn.put(.meta, [3], [3])
            },
        ])
        #expect(outcomes.map { $0 == nil } == [true, false, true])
        #expect(outcomes[1] is Refused)
        #expect(backend.writes == commits + 1, "one commit for the group")
        #expect(connection.roundTrips - trips == 3,
                "the two reads, and the COMMIT: savepoints and upserts ride with them")
        #expect(try store.read { [try $0.get(.meta, [1]), try $0.get(.meta, [2]), try $0.get(.meta, [3])] }
                    == [[1], nil, [3]])
    }

    @Test func aDatabaseFailureInOneWriteFailsTheWholeGroup() throws {
        let (f, store, _) = try Self.open()
        defer { withExtendedLifetime(f) {} }
        try Self.refuseLongValues(in: "ae_meta", of: f)
        #expect(throws: StoreError.self) {
            _ = try store.writeBatch([
                { txn in try txn.put(.meta, [1], [1]) },
                { txn in try txn.put(.meta, [2], Array(repeating: 9, count: 20)) },
                { txn in try txn.put(.meta, [3], [3]) },
            ])
        }
        #expect(try store.read { [try $0.get(.meta, [1]), try $0.get(.meta, [3])] } == [nil, nil],
                "nothing of the group committed")
        #expect(try store.writeBatch([{ txn in try txn.put(.meta, [4], [4]) }]).first! == nil, "the next group commits")
    }

    /// Groups of read-modify-writes of one counter from every connection at once: conflicts
    /// run whole groups again, and no increment is lost or doubled.
    @Test func concurrentGroupsLoseNothing() throws {
        let failures = PostgresConcurrencyTests.Results<String>()
        let f = try PostgresConcurrencyTests.concurrently { _, store in
            do {
                guard let store else { throw StoreError(.open, "the store did not open") }
                for _ in 0..<5 {
                    let bump: (Transaction) throws -> Void = { txn in
                        let n = try txn.get(.meta, [9]).map { UInt32($0[0]) << 8 | UInt32($0[1]) } ?? 0
                        try txn.put(.meta, [9], [UInt8((n + 1) >> 8), UInt8((n + 1) & 0xFF)])
                    }
                    for outcome in try store.writeBatch([bump, bump, bump]) { if let outcome { throw outcome } }
                }
            } catch { failures.append("\(error)") }
        }
        #expect(failures.all.isEmpty)
        #expect(try f.open().read { try $0.get(.meta, [9]) } == [0, UInt8(PostgresConcurrencyTests.writers * 15)])
    }
}

extension PostgresRoundTripTests {
    /// The admission's write (rate windows, the challenge's single use) does not wait for the
    /// WAL flush; every other write does (see `PostgresStore`).
    @Test func onlyEphemeralWritesSkipTheFlush() throws {
        let (fixture, store, connection) = try Self.open()
        defer { withExtendedLifetime(fixture) {} }
        func setting(_ environments: Set<Database.Environment>) throws -> String {
            try store.write(environments) { _ in
                String(decoding: try connection.run("SELECT current_setting('synchronous_commit')", []).bytes(0, 0),
                       as: UTF8.self)
            }
        }
        #expect(try setting([.ephemeral]) == "off")
        #expect(try setting([.durable]) == "on")
        #expect(try setting([.durable, .ephemeral]) == "on")
        #expect(try store.read { _ in
            String(decoding: try connection.run("SELECT current_setting('synchronous_commit')", []).bytes(0, 0),
                   as: UTF8.self)
        } == "on")
    }
}
