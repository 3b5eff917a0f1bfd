#if canImport(Glibc)
import Glibc
#endif

/// A fixed set of threads, each with its own `WebhookTransport`, taking jobs from one queue and
/// putting results on another (a mutex and two condition variables; nothing else is shared).
final class SenderPool: @unchecked Sendable {
    private var lock = pthread_mutex_t()
    private var jobsReady = pthread_cond_t()
    private var resultsReady = pthread_cond_t()
    private var jobs = [DeliveryJob]()
    private var done = [(DeliveryJob, AttemptResult)]()
    private var stopping = false
    private var threads = [pthread_t]()
    private let timeoutSeconds: Int
    private let transport: @Sendable () -> any WebhookTransport

    init(threads count: Int, timeoutSeconds: Int, transport: @escaping @Sendable () -> any WebhookTransport) {
        self.timeoutSeconds = timeoutSeconds
        self.transport = transport
        pthread_mutex_init(&lock, nil)
        pthread_cond_init(&jobsReady, nil)
        // `results` waits against the monotonic clock: a wall-clock step back (NTP) while
        // nothing is in flight would otherwise stall the whole deliverer for the step.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(&resultsReady, &attributes)
        pthread_condattr_destroy(&attributes)
        for _ in 0..<count {
            var thread = pthread_t()
            pthread_create(&thread, nil, { raw in
                Unmanaged<SenderPool>.fromOpaque(raw!).takeRetainedValue().work()
                return nil
            }, Unmanaged.passRetained(self).toOpaque())
            threads.append(thread)
        }
    }

    func submit(_ job: DeliveryJob) {
        pthread_mutex_lock(&lock)
        jobs.append(job)
        pthread_cond_signal(&jobsReady)
        pthread_mutex_unlock(&lock)
    }

    /// The results so far; waits up to `waitMilliseconds` for the first when there is none.
    func results(waitMilliseconds: Int) -> [(DeliveryJob, AttemptResult)] {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        if done.isEmpty && waitMilliseconds > 0 {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let ns = deadline.tv_nsec + waitMilliseconds * 1_000_000
            deadline.tv_sec += ns / 1_000_000_000
            deadline.tv_nsec = ns % 1_000_000_000
            _ = pthread_cond_timedwait(&resultsReady, &lock, &deadline)
        }
        let taken = done
        done.removeAll(keepingCapacity: true)
        return taken
    }

    /// Stops the threads once their current job is done and joins them.
    func shutdown() {
        pthread_mutex_lock(&lock)
        stopping = true
        pthread_cond_broadcast(&jobsReady)
        pthread_mutex_unlock(&lock)
        for t in threads { pthread_join(t, nil) }
        threads.removeAll()
    }

    private func work() {
        let sender = transport()
        while true {
            pthread_mutex_lock(&lock)
            while jobs.isEmpty && !stopping { pthread_cond_wait(&jobsReady, &lock) }
            if jobs.isEmpty { pthread_mutex_unlock(&lock); return }
            let job = jobs.removeFirst()
            pthread_mutex_unlock(&lock)
            let result = sender.post(url: job.url, headers: job.headers, body: job.body, timeoutSeconds: timeoutSeconds)
            pthread_mutex_lock(&lock)
            done.append((job, result))
            pthread_cond_signal(&resultsReady)
            pthread_mutex_unlock(&lock)
        }
    }
}
