#if canImport(Glibc)
import Glibc
#endif

/// A background thread that calls `mdb_env_sync` every interval, for `StoreOptions.Sync.interval`.
///
/// Started after the environment is open (so after fork in a worker); stopped and joined
/// when the store closes, with one last sync.
final class SyncThread {
    private final class State: @unchecked Sendable {
        let environment: LMDBEnvironment
        let intervalMicroseconds: UInt32
        var stop = false
        var lock = pthread_mutex_t()
        var failures = 0

        init(environment: LMDBEnvironment, intervalMicroseconds: UInt32) {
            self.environment = environment
            self.intervalMicroseconds = intervalMicroseconds
            pthread_mutex_init(&lock, nil)
        }

        var shouldStop: Bool {
            pthread_mutex_lock(&lock)
            defer { pthread_mutex_unlock(&lock) }
            return stop
        }
    }

    private let state: State
    private var thread = pthread_t()

    init(environment: LMDBEnvironment, milliseconds: Int) {
        state = State(environment: environment, intervalMicroseconds: UInt32(max(1, milliseconds) * 1000))
        let context = Unmanaged.passRetained(state).toOpaque()
        pthread_create(&thread, nil, { raw in
            let state = Unmanaged<State>.fromOpaque(raw!).takeRetainedValue()
            var synced = -1
            while !state.shouldStop {
                usleep(state.intervalMicroseconds)
                // Only when something was committed since the last sync (by any process):
                // an idle server does not fsync at all.
                let last = state.environment.lastTransactionID
                if last != synced {
                    if state.environment.sync() == 0 { synced = last } else { state.failures += 1 }
                }
            }
            return nil
        }, context)
    }

    func stop() {
        pthread_mutex_lock(&state.lock)
        state.stop = true
        pthread_mutex_unlock(&state.lock)
        pthread_join(thread, nil)
        _ = state.environment.sync()
    }
}
