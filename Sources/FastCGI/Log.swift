import Glibc

/// Event log of a pool: one line per event on stderr, `name[pid]: message`, written with a
/// single `write(2)` so lines from the master and its workers do not interleave. Messages are
/// `LogMessage`s: interpolated values arrive escaped, so one event is always one line.
struct Log: Sendable {
    let name: String

    func callAsFunction(_ message: LogMessage) {
        var line = "\(LogMessage.escape(name, quotes: false))[\(getpid())]: \(message.text)\n"
        line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }
}

/// Monotonic time in seconds, for backoffs and deadlines (never the wall clock).
enum MonotonicClock {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// `strerror(errno)` as a `String`.
func errnoDescription(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
