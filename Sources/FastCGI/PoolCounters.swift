/// What a pool's master reports as it runs, for metrics (`FastCGIServer.run`): called in the
/// master only, never on a worker's request path. The default reports nothing.
public struct PoolCounters {
    /// The workers running now (not those a reload is retiring), after every change.
    public var workers: (Int) -> Void
    /// A worker that exited on its own (not at a stop or a reload) and is being replaced.
    public var restarted: () -> Void
    /// A reload completed: a new image took over, or (without one) the workers were replaced.
    public var reloaded: () -> Void

    public init(workers: @escaping (Int) -> Void = { _ in }, restarted: @escaping () -> Void = {},
                reloaded: @escaping () -> Void = {}) {
        self.workers = workers
        self.restarted = restarted
        self.reloaded = reloaded
    }
}
