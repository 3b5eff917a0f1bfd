/// The SQL layout of a PostgreSQL-protocol store, versioned, and its migrations.
///
/// ```
/// ae_schema        (version INT PRIMARY KEY, applied_at TIMESTAMPTZ)   one row per migration
/// ae_<database>    (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)             one per `Database`
/// ae_write_gate    (no columns, no rows)                             version 2: only locked
/// ae_outbox_seq    (a BIGINT sequence)                               version 3: outbox keys
/// ae_usage_days    (as every ae_<database>)                          version 4: returning devices per day
///                                                                    (and ae_usage_devices' fillfactor 70)
/// ae_webhook_counts (as every ae_<database>)                         version 5: per-organization webhook counts
/// ae_receipt_due, ae_apple_teams (as every ae_<database>)            version 6: receipts to redeem, Apple teams
/// ae_feature_flag_apps, ae_feature_flags, ae_feature_flag_overrides,
///   ae_release_notes, ae_notes_seen, ae_device_versions              version 7: feature flags, What's New
/// ae_feature_requests, ae_feature_votes, ae_feature_comments,
///   ae_tickets, ae_ticket_messages, ae_tickets_by_author,
///   ae_feedback_usage                                                version 8: feature requests, support tickets
/// ae_console_logins, ae_console_sessions, ae_audit_log,
///   ae_activity_days, ae_revocations, ae_audit_counts                version 9: the operator console, the audit log,
///                                                                    attestations and refreshes per day, why a key
///                                                                    was revoked
/// ```
/// `ae_outbox_seq` numbers the outbox (`Transaction.append`: the key is the number as 8 bytes
/// big-endian); version 3 starts it above the highest key the outbox already holds.
/// `ae_write_gate` orders serializable writers (`PostgresStore`): each takes it in
/// `ROW EXCLUSIVE` mode (shared), a write that keeps losing conflicts in `EXCLUSIVE` mode.
/// `ae_devices`, `ae_usage_months`, `ae_challenges`, … hold exactly the keys and values the
/// LMDB databases of the same name hold (the records' layouts are in `Records/`), ordered by
/// `k` as bytes, as LMDB orders them. The SQL is kept to `BYTEA` keys, `INSERT … ON CONFLICT`
/// and `LIMIT` in subqueries, which PostgreSQL-compatible distributed databases accept, plus
/// `LOCK TABLE` on `ae_write_gate`, which CockroachDB lacks, and `int8send`, `encode` and
/// `BIT(64)` casts around the outbox's sequence. Only PostgreSQL 15 is tested.
///
/// A migration is a list of statements and the row that records it. `attestctl store migrate`
/// applies those a database lacks, all in one transaction, so another process sees the
/// version before or the version after, never one in between (processes opening a fresh
/// database at once each try to migrate it; a process that found a version in between was
/// refused as outdated); a fresh database is migrated on first open; a database with a newer
/// version than this build knows is refused.
public enum PostgresSchema {
    /// Every migration, oldest first; the last one's number is the version this build writes.
    static let migrations: [(version: Int, statements: [String])] = [
        (1, ["CREATE TABLE IF NOT EXISTS ae_schema (version INT PRIMARY KEY,"
                + " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"]
            + Database.allCases.filter { !laterTables.contains($0) }.map(createTable)),
        (2, ["CREATE TABLE IF NOT EXISTS \(writeGate) ()"]),
        (3, sequenced.flatMap { db in [
            "CREATE SEQUENCE IF NOT EXISTS \(sequence(db)) AS BIGINT MINVALUE 1",
            "SELECT setval('\(sequence(db))', coalesce((SELECT max(('x' || encode(k, 'hex'))::BIT(64)::BIGINT)"
                + " FROM \(table(db)) WHERE length(k) = 8), 0) + 1, false)",
        ] }),
        (4, [createTable(.usageDays),
             "ALTER TABLE \(table(.usageDevices)) SET (fillfactor = \(usageDevicesFillFactor))"]),
        (5, [createTable(.webhookCounts)]),
        (6, [createTable(.receiptDue), createTable(.appleTeams)]),
        (7, version7.map(createTable)),
        (8, version8.map(createTable)),
        (9, version9.map(createTable)),
    ]

    /// Feature flags and What's New (issue 41).
    static let version7: [Database] = [.featureFlagApps, .featureFlags, .featureFlagOverrides, .releaseNotes,
                                       .notesSeen, .deviceVersions]

    /// Feature requests and support tickets (issue 42).
    static let version8: [Database] = [.featureRequests, .featureVotes, .featureComments, .tickets, .ticketMessages,
                                       .ticketsByAuthor, .feedbackUsage]

    /// The operator console's sign-in links and sessions, and the organization audit log (issue 43).
    static let version9: [Database] = [.consoleLogins, .consoleSessions, .auditLog, .activityDays, .revocations,
                                       .auditCounts]

    /// The databases a migration after version 1 adds (each creates its own table).
    static let laterTables = Set<Database>([.usageDays, .webhookCounts, .receiptDue, .appleTeams] + version7
                                               + version8 + version9)

    static func createTable(_ db: Database) -> String {
        "CREATE TABLE IF NOT EXISTS \(table(db)) (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)"
    }

    /// How full PostgreSQL packs `ae_usage_devices`' pages (percent; the default is 100). A
    /// counted device's entry is written on its first request of the month and rewritten on
    /// its first of each later day. With room left on its page the new version stays there
    /// (a HOT update); on a full page it moves to whichever page has room, the same few pages
    /// for every writer, where serializable transactions updating unrelated devices then
    /// conflict. Measured with `nginx/bench/daystart.sh` (4 processes counting returning
    /// devices at a day start): rollbacks fell from 742–808 to 201–235 per 1,252 transactions
    /// and the rate rose from 0.44–0.55 to 0.71–1.08 of the same work without a shared store.
    /// Pages written before version 4 keep their packing until rewritten.
    static let usageDevicesFillFactor = 70

    /// The databases whose keys a sequence numbers (`Transaction.append`).
    static let sequenced: [Database] = [.outbox]

    static func sequence(_ db: Database) -> String { table(db) + "_seq" }

    /// The table serializable writers lock (see `PostgresStore`); it never holds a row.
    static let writeGate = "ae_write_gate"

    public static var version: Int { migrations.last!.version }

    static func table(_ db: Database) -> String { "ae_" + db.rawValue }

    /// The version a database is at: 0 when it has no `ae_schema` table.
    static func currentVersion(_ connection: PGConnection) throws -> Int {
        do {
            let result = try connection.run("SELECT coalesce(max(version), 0)::BIGINT FROM ae_schema", [])
            return Int(result.int64(0, 0))
        } catch let failure as PGConnection.Failure where failure.sqlState == "42P01" {
            return 0
        }
    }

    /// Applies the migrations `connection`'s database lacks; returns their versions.
    /// - Throws: `StoreError(.open)` when the database is newer than this build.
    @discardableResult
    static func migrate(_ connection: PGConnection) throws -> [Int] {
        let current = try currentVersion(connection)
        guard current <= version else {
            throw StoreError(.open, "the database has schema version \(current); this build knows \(version): "
                                        + "upgrade attestctl")
        }
        let pending = migrations.filter { $0.version > current }
        guard !pending.isEmpty else { return [] }
        do {
            try connection.command("BEGIN")
            for migration in pending {
                for statement in migration.statements { try connection.command(statement) }
                _ = try connection.run(
                    "INSERT INTO ae_schema (version) VALUES ($1::INT) ON CONFLICT (version) DO NOTHING",
                    [.text(String(migration.version))])
            }
            try connection.command("COMMIT")
            return pending.map(\.version)
        } catch {
            try? connection.command("ROLLBACK")
            // Another process migrating at the same moment: fine if it got there.
            if try currentVersion(connection) >= version { return [] }
            throw error
        }
    }
}
