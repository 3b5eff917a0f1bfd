/// How the store opens its environments. Comes from the `store` section of the configuration.
public struct StoreOptions: Sendable, Hashable {
    /// When the durable environment reaches the disk.
    public enum Sync: Sendable, Hashable {
        /// fsync at every commit (the default): a committed write survives power loss.
        case commit
        /// Commit without fsync; a background thread syncs every `milliseconds`. Nothing is
        /// lost when a process dies; at most that window when the machine loses power.
        case interval(milliseconds: Int)
    }

    /// Upper bound of the durable environment's size (LMDB's map size), in MiB.
    public var durableMapSizeMiB: Int
    /// Upper bound of the ephemeral environment's size, in MiB.
    public var ephemeralMapSizeMiB: Int
    public var sync: Sync
    /// LMDB reader slots per environment (one per concurrent read transaction, all processes).
    public var maxReaders: Int

    public init(durableMapSizeMiB: Int = 1024, ephemeralMapSizeMiB: Int = 256, sync: Sync = .commit, maxReaders: Int = 256) {
        self.durableMapSizeMiB = durableMapSizeMiB
        self.ephemeralMapSizeMiB = ephemeralMapSizeMiB
        self.sync = sync
        self.maxReaders = maxReaders
    }
}
