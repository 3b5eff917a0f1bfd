/// How the store opens its backend. Comes from the `store` section of the configuration.
public struct StoreOptions: Sendable, Hashable {
    /// Where the store lives.
    public enum Backend: Sendable, Hashable {
        /// Embedded LMDB under the data directory (`store.backend: "lmdb"`).
        case lmdb
        /// A PostgreSQL-protocol database (`store.backend: "postgres"`, `store.postgres.url`:
        /// a libpq connection string or URI).
        case postgres(url: String)
    }

    /// When the durable environment reaches the disk (LMDB; PostgreSQL commits durably).
    public enum Sync: Sendable, Hashable {
        /// fsync at every commit (the default): a committed write survives power loss.
        case commit
        /// Commit without fsync (`MDB_NOSYNC`); a background thread syncs every `milliseconds`.
        /// Nothing is lost when a process dies. A power cut loses up to that window and, as
        /// LMDB documents for `MDB_NOSYNC`, can leave the environment corrupt where the file
        /// system does not preserve write order (ext4 does not promise it).
        case interval(milliseconds: Int)
    }

    public var backend: Backend
    /// Upper bound of the durable environment's size (LMDB's map size), in MiB.
    public var durableMapSizeMiB: Int
    /// Upper bound of the ephemeral environment's size, in MiB.
    public var ephemeralMapSizeMiB: Int
    public var sync: Sync
    /// LMDB reader slots per environment (one per concurrent read transaction, all processes).
    public var maxReaders: Int
    /// PostgreSQL: how many times a transaction that lost a serialization conflict is run
    /// again before the request fails with 503.
    public var maxRetries: Int
    /// PostgreSQL: after this many lost conflicts (and on its last allowed run) a write runs
    /// alone, every other serializable writer of the database held off (`PostgresStore`).
    public var exclusiveAfterConflicts: Int

    public init(backend: Backend = .lmdb, durableMapSizeMiB: Int = 1024, ephemeralMapSizeMiB: Int = 256,
                sync: Sync = .commit, maxReaders: Int = 256, maxRetries: Int = 20, exclusiveAfterConflicts: Int = 3) {
        self.backend = backend
        self.durableMapSizeMiB = durableMapSizeMiB
        self.ephemeralMapSizeMiB = ephemeralMapSizeMiB
        self.sync = sync
        self.maxReaders = maxReaders
        self.maxRetries = maxRetries
        self.exclusiveAfterConflicts = exclusiveAfterConflicts
    }
}
