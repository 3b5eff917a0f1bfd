import AttestCore
@testable import AttestStore
import Foundation
import Testing

/// PostgreSQL only: the schema's migrations on a database that already holds data.
@Suite(.enabled(if: StoreConformance.kinds.contains(.postgres), "needs ATTEST_TEST_POSTGRES_URL"))
struct PostgresSchemaTests {
    /// A version-2 database numbered its outbox by the last key; version 3's sequence starts
    /// above the highest key there, so the first event appended after the upgrade follows it.
    @Test func theOutboxSequenceStartsAboveTheEventsAlreadyQueued() throws {
        let f = try StoreConformance.Fixture(.postgres)
        let event = OutboxEvent(id: "evt_1", event: "device.new", org: "acme",
                                createdAt: Timestamp(seconds: 1_790_000_000), dataJSON: "{}")
        try f.open().write([.durable]) { txn in try txn.put(.outbox, BigEndian.bytes(UInt64(41)), event.encoded()) }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        try admin.command("DROP SEQUENCE \(schema).ae_outbox_seq")
        try admin.command("DROP TABLE \(schema).ae_usage_days")
        try admin.command("DROP TABLE \(schema).ae_webhook_counts")
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version >= 3")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [3, 4, 5, 6, 7, 8, 9])
        try store.write([.durable]) { txn in try txn.enqueue(event) }
        #expect(try store.read { try $0.outbox().map(\.sequence) } == [41, 42])
    }

    /// A version-3 database has no `ae_usage_days`: refused until migrated, then a returning
    /// device's day is counted there and reported beside what the month's record already held.
    @Test func version4AddsTheDayCountsBesideExistingMonths() throws {
        let f = try StoreConformance.Fixture(.postgres)
        var month = UsageMonthRecord()
        month.note(day: 1, new: false, active: true)
        try f.open().write([.durable]) { txn in try txn.put(month, org: "acme", month: "2026-12") }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        try admin.command("DROP TABLE \(schema).ae_usage_days")
        try admin.command("DROP TABLE \(schema).ae_webhook_counts")
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version >= 4")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [4, 5, 6, 7, 8, 9])
        try store.write([.durable]) { txn in try txn.countReturningDevice(org: "acme", month: "2026-12", day: 1) }
        #expect(try store.read { try $0.usageMonthReport(org: "acme", month: "2026-12") }?.days
                    == [.init(newDevices: 0, activeDevices: 2)])
    }

    /// A version-4 database has no `ae_webhook_counts`: refused until migrated; then an
    /// organization's deliveries and queued test events stored before the upgrade are counted
    /// on first use, and the count goes on from there.
    @Test func version5CountsTheDeliveriesStoredBeforeIt() throws {
        let f = try StoreConformance.Fixture(.postgres)
        let now = Timestamp(seconds: 1_790_000_000)
        try f.open().write([.durable]) { txn in
            try txn.put(WebhookEndpointRecord(id: "wh_1", org: "acme", url: "https://h.example/x", events: [],
                                              description: "", secret: "s", createdAt: now))
            let event = OutboxEvent(id: "evt_1", event: "device.new", org: "acme", createdAt: now, dataJSON: "{}")
            for _ in 0..<3 { try txn.put(DeliveryRecord(endpointID: "wh_1", event: event, firstAttemptAt: now)) }
            try txn.enqueue(OutboxEvent(id: "evt_2", event: "webhook.test", org: "acme", createdAt: now, dataJSON: "{}",
                                        target: "wh_1"))
            try txn.enqueue(OutboxEvent(id: "evt_3", event: "device.new", org: "acme", createdAt: now, dataJSON: "{}"))
        }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        try admin.command("DROP TABLE \(schema).ae_webhook_counts")
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version >= 5")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [5, 6, 7, 8, 9])
        #expect(try store.read { try $0.webhookCount(org: "acme") } == WebhookCountRecord(stored: 4),
                "3 deliveries and 1 queued test event")
        #expect(try store.check().isConsistent)
    }

    /// A version-5 database has no `ae_receipt_due` nor `ae_apple_teams`: refused until
    /// migrated; its receipts stored as v1 records then read as unchecked, and the new
    /// databases work.
    @Test func version6AddsTheReceiptQueueAndAppleTeams() throws {
        let f = try StoreConformance.Fixture(.postgres)
        let now = Timestamp(seconds: 1_790_000_000)
        let keyID = [UInt8](repeating: 5, count: 32)
        try f.open().write([.durable]) { txn in try txn.put(.receipts, keyID, [1, 0x30, 0x80]) }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        try admin.command("DROP TABLE \(schema).ae_receipt_due")
        try admin.command("DROP TABLE \(schema).ae_apple_teams")
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version >= 6")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [6, 7, 8, 9])
        let old = try #require(try store.read { try $0.receiptRecord(keyID: keyID) })
        #expect(old.check == .unchecked && old.receipt == [0x30, 0x80])
        try store.write([.durable]) { txn in
            var scheduled = old
            scheduled.nextRedeemAt = now
            try txn.put(scheduled, keyID: keyID)
            try txn.put(AppleTeamRecord(teamID: "ABCDE12345"))
        }
        #expect(try store.read { try $0.dueReceipts(at: now, limit: 5) }.map(\.keyID) == [keyID])
        #expect(try store.read { try $0.appleTeams() }.map(\.teamID) == ["ABCDE12345"])
    }

    /// A version-6 database has none of the feature-flag tables: refused until migrated, then
    /// they hold flags, notes and seen marks as LMDB does.
    @Test func version7AddsFeatureFlagsAndReleaseNotes() throws {
        let f = try StoreConformance.Fixture(.postgres)
        let now = Timestamp(seconds: 1_790_000_000)
        try f.open().write([.durable]) { txn in try txn.put(AppleTeamRecord(teamID: "ABCDE12345")) }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        for db in PostgresSchema.version7 { try admin.command("DROP TABLE \(schema).\(PostgresSchema.table(db))") }
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version >= 7")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [7, 8, 9])
        let lineage = LineageKey.fingerprint("fp", appID: "ABCDE12345.app")
        try store.write([.durable]) { txn in
            try txn.put(FeatureFlagRecord(key: "dark", type: .bool, description: "", createdAt: now, updatedAt: now),
                        appID: "ABCDE12345.app")
            _ = try txn.markNoteSeen(lineage: lineage, note: [UInt8](repeating: 1, count: 16), at: now)
        }
        #expect(try store.read { try $0.featureFlags(appID: "ABCDE12345.app") }.map(\.key) == ["dark"])
        #expect(try store.read { try $0.appleTeams() }.map(\.teamID) == ["ABCDE12345"], "what was there stays")
    }

    /// A version-7 database has none of the feedback tables: refused until migrated, then
    /// they hold requests, votes and tickets as LMDB does, and what was there stays.
    @Test func version8AddsFeatureRequestsAndTickets() throws {
        let f = try StoreConformance.Fixture(.postgres)
        let now = Timestamp(seconds: 1_790_000_000), app = "ABCDE12345.app", author = FeedbackAuthor.admin
        try f.open().write([.durable]) { txn in
            try txn.put(FeatureFlagRecord(key: "dark", type: .bool, description: "", createdAt: now, updatedAt: now),
                        appID: app)
        }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        for db in PostgresSchema.version8 { try admin.command("DROP TABLE \(schema).\(PostgresSchema.table(db))") }
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version >= 8")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [8, 9])
        let id = [UInt8](repeating: 1, count: 16)
        try store.write([.durable]) { txn in
            try txn.put(FeatureRequestRecord(id: id, title: "Dark mode", description: "Please", createdAt: now,
                                             updatedAt: now, author: author, submitterID: "u1"), appID: app)
            #expect(try txn.putVote(FeatureVoteRecord(voteID: id, voterID: "u1", createdAt: now), requestID: id,
                                    author: author))
            try txn.put(TicketRecord(id: id, subject: "Help", createdAt: now, updatedAt: now, author: author,
                                     submitterID: "u1"), appID: app)
            try txn.put(FeedbackUsageRecord(requests: 1, tickets: 1), org: "acme")
        }
        #expect(try store.read { try $0.featureRequests(appID: app) }.map(\.title) == ["Dark mode"])
        #expect(try store.read { try $0.voteCount(requestID: id) } == 1)
        #expect(try store.read { try $0.tickets(appID: app, author: author) }.map(\.subject) == ["Help"])
        #expect(try store.read { try $0.feedbackUsage(org: "acme") } == FeedbackUsageRecord(requests: 1, tickets: 1))
        #expect(try store.read { try $0.featureFlags(appID: app) }.map(\.key) == ["dark"], "what was there stays")
    }

    /// A version-8 database has no console or audit tables: refused until migrated, then
    /// they hold sessions and audit entries as LMDB does, and what was there stays.
    @Test func version9AddsConsoleSessionsAndTheAuditLog() throws {
        let f = try StoreConformance.Fixture(.postgres)
        let now = Timestamp(seconds: 1_790_000_000)
        try f.open().write([.durable]) { txn in try txn.put(OrgRecord(name: "acme", tier: .pro, createdAt: now)) }
        let schema = try #require(f.schemaName)
        let admin = PGConnection(url: try #require(StoreConformance.postgresURL))
        try admin.ensure()
        for db in PostgresSchema.version9 { try admin.command("DROP TABLE \(schema).\(PostgresSchema.table(db))") }
        try admin.command("DELETE FROM \(schema).ae_schema WHERE version = 9")

        let store = try f.open()
        let backend = try #require(store.backend as? PostgresStore)
        #expect(throws: StoreError.self, "an outdated schema is refused until migrated") { try store.read { _ in } }
        #expect(try backend.migrate() == [9])
        let id = [UInt8](repeating: 2, count: 16)
        try store.write([.durable]) { txn in
            try txn.put(ConsoleSessionRecord(id: id, org: "acme", role: .editor, name: "Pat",
                                             secretHash: [UInt8](repeating: 3, count: 32),
                                             csrf: [UInt8](repeating: 4, count: 32), createdAt: now, expiresAt: now + 60))
            try txn.appendAudit(AuditRecord(at: now, actor: .cli, actorID: "root", actorName: "attestctl", role: nil,
                                            action: "flag.set", target: "dark", detail: ""), org: "acme")
        }
        #expect(try store.read { try $0.consoleSession(id: id) }?.role == .editor)
        #expect(try store.read { try $0.auditEntries(org: "acme", limit: 5) }.map(\.action) == ["flag.set"])
        #expect(try store.read { try $0.org(named: "acme") } != nil, "what was there stays")
    }
}
