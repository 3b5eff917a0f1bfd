/// What nginx's nchan says about the flag stream at a scrape (its `nchan_stub_status`, read
/// from the publisher socket by the monitor pool). Every number is nchan's, for the whole
/// nginx: a host whose nginx uses nchan for something else counts that too.
public struct FlagStreamGauges: Sendable, Equatable {
    /// Subscribers connected now (open flag streams).
    public var subscribers: UInt64
    /// Channels nchan holds now (each app's environments that have had a subscriber or a
    /// publish since nginx started, and their `~empty`).
    public var channels: UInt64
    /// Messages stored now (one per channel at most: the publisher keeps a buffer of 1).
    public var storedMessages: UInt64?
    /// Messages published since nginx started (nchan keeps it across `nginx -s reload`).
    public var publishedMessages: UInt64?
    /// nchan's shared memory in use and its size (`flags.streamMemoryMiB`), in bytes.
    public var sharedMemoryUsedBytes: UInt64?
    public var sharedMemoryLimitBytes: UInt64?

    public init(subscribers: UInt64, channels: UInt64, storedMessages: UInt64? = nil, publishedMessages: UInt64? = nil,
                sharedMemoryUsedBytes: UInt64? = nil, sharedMemoryLimitBytes: UInt64? = nil) {
        self.subscribers = subscribers
        self.channels = channels
        self.storedMessages = storedMessages
        self.publishedMessages = publishedMessages
        self.sharedMemoryUsedBytes = sharedMemoryUsedBytes
        self.sharedMemoryLimitBytes = sharedMemoryLimitBytes
    }
}
