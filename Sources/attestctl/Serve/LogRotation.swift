import AttestService
#if canImport(Glibc)
import Glibc
#endif

/// Keeps each log `attestctl serve` writes (DATA/log) under `maxBytes`, plus one previous
/// generation `NAME.1`: at most twice `maxBytes` per file, whatever the load.
///
/// - nginx's `access.log` and `error.log` are renamed to `NAME.1` and nginx is told to reopen
///   them (SIGUSR1): no line is lost.
/// - The pools' logs and `nginx.out` are held open by processes that cannot reopen them, so
///   they are copied to `NAME.1` and truncated in place (their writers append, `O_APPEND`, so
///   the next line lands at the start): lines written during the copy can be lost.
struct LogRotation {
    /// Files nginx reopens on SIGUSR1.
    static let reopenedByNginx: Set<String> = ["access.log", "error.log"]

    let directory: String
    let maxBytes: Int

    /// Rotates every log over the limit; returns whether nginx must reopen its files.
    func rotate() -> Bool {
        var reopen = false
        for name in FileIO.list(directory) where name.hasSuffix(".log") || name.hasSuffix(".out") {
            let path = directory + "/" + name
            var st = stat()
            guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, Int(st.st_size) > maxBytes else { continue }
            if Self.reopenedByNginx.contains(name) {
                if rename(path, path + ".1") == 0 { reopen = true }
            } else {
                Self.copyAndTruncate(path, to: path + ".1")
            }
        }
        return reopen
    }

    private static func copyAndTruncate(_ path: String, to target: String) {
        let from = open(path, O_RDONLY | O_CLOEXEC)
        guard from >= 0 else { return }
        defer { close(from) }
        let to = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard to >= 0 else { return }
        defer { close(to) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            let written = buffer.withUnsafeBytes { write(to, $0.baseAddress, n) }
            guard written == n else { break }
        }
        _ = truncate(path, 0)
    }
}
