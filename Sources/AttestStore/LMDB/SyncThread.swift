#if canImport(Glibc)
import Glibc
#endif

/// The background sync of `store.sync = interval` (`StoreOptions.Sync.interval`): the durable
/// environment commits without a sync (`MDB_NOSYNC`), and this thread `fdatasync`s it at most
/// one interval after this process's first commit not yet synced.
///
/// - Asleep while this process commits nothing: `committed()` wakes it. An idle worker makes
///   no wake-ups at all, except a sweep every `sweepSeconds` that syncs commits left unsynced
///   by a process that died before its own sync (the page cache kept them; a power cut
///   within that second would not).
/// - One sync per interval for all processes: the sync goes through a `DurabilityBarrier`
///   (the shared `durable/sync.state`), so a process whose commits another process's sync
///   already covered does not sync again. Before, every worker of every pool synced every
///   interval while any process was writing.
///
/// Started after the environment is open (so after fork in a worker); stopped and joined
/// when the store closes, with one last sync.
final class SyncThread {
    static let sweepSeconds = 1

    private final class State: @unchecked Sendable {
        let barrier: DurabilityBarrier
        let intervalNanoseconds: Int
        var lock = pthread_mutex_t()
        var wake = pthread_cond_t()
        // Under `lock`:
        var stop = false
        /// When this process first committed after the last sync (monotonic ns), or nil.
        var pendingSince: Int?
        var syncs = 0
        var failures = 0
        var wakeUps = 0

        init(environment: LMDBEnvironment, intervalMilliseconds: Int) {
            barrier = DurabilityBarrier(environment: environment)
            intervalNanoseconds = max(1, intervalMilliseconds) * 1_000_000
            pthread_mutex_init(&lock, nil)
            var attributes = pthread_condattr_t()
            pthread_condattr_init(&attributes)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
            pthread_cond_init(&wake, &attributes)
            pthread_condattr_destroy(&attributes)
        }

        /// Waits (holding `lock`) until `deadline` (monotonic ns), a signal, or a spurious wake.
        func wait(until deadline: Int) {
            var time = timespec(tv_sec: deadline / 1_000_000_000, tv_nsec: deadline % 1_000_000_000)
            _ = pthread_cond_timedwait(&wake, &lock, &time)
            wakeUps += 1
        }

        /// Syncs unless every transaction committed so far is known durable (a failure is
        /// counted; the next commit or sweep tries again). Not under `lock`.
        func syncIfBehind() {
            let last = barrier.environment.lastTransactionID
            guard !barrier.isDurable(last) else { return }
            let before = barrier.syncs
            let ok = (try? barrier.sync(covering: last)) != nil
            pthread_mutex_lock(&lock)
            syncs += barrier.syncs - before
            if !ok { failures += 1 }
            pthread_mutex_unlock(&lock)
        }
    }

    private let state: State
    private var thread = pthread_t()
    private var stopped = false

    init(environment: LMDBEnvironment, milliseconds: Int) {
        state = State(environment: environment, intervalMilliseconds: milliseconds)
        let context = Unmanaged.passRetained(state).toOpaque()
        pthread_create(&thread, nil, { raw in
            SyncThread.run(Unmanaged<State>.fromOpaque(raw!).takeRetainedValue())
            return nil
        }, context)
    }

    private static func run(_ state: State) {
        pthread_mutex_lock(&state.lock)
        while !state.stop {
            if let since = state.pendingSince {
                let deadline = since + state.intervalNanoseconds
                if monotonicNanoseconds() < deadline { state.wait(until: deadline); continue }
                state.pendingSince = nil
            } else {
                let sweep = monotonicNanoseconds() + sweepSeconds * 1_000_000_000
                state.wait(until: sweep)
                if state.stop || state.pendingSince != nil { continue }
            }
            // A commit after this point sets `pendingSince` again: the next round covers it.
            pthread_mutex_unlock(&state.lock)
            state.syncIfBehind()
            pthread_mutex_lock(&state.lock)
        }
        pthread_mutex_unlock(&state.lock)
    }

    /// This process committed a durable write: it is synced within one interval.
    func committed() {
        pthread_mutex_lock(&state.lock)
        if state.pendingSince == nil {
            state.pendingSince = monotonicNanoseconds()
            pthread_cond_signal(&state.wake)
        }
        pthread_mutex_unlock(&state.lock)
    }

    /// `fdatasync`s this thread made, those that failed, and how often it woke (tests).
    var counts: (syncs: Int, failures: Int, wakeUps: Int) {
        pthread_mutex_lock(&state.lock)
        defer { pthread_mutex_unlock(&state.lock) }
        return (state.syncs, state.failures, state.wakeUps)
    }

    /// Stops and joins the thread, then syncs what is left. Later calls do nothing.
    func stop() {
        guard !stopped else { return }
        stopped = true
        pthread_mutex_lock(&state.lock)
        state.stop = true
        pthread_cond_signal(&state.wake)
        pthread_mutex_unlock(&state.lock)
        pthread_join(thread, nil)
        state.syncIfBehind()
    }
}
