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
///
/// serve runs this as root in a directory the service user owns, so everything goes through
/// `PinnedDirectory`: only regular files are rotated (a link named `x.log` is left alone and
/// reported once), the copy is written to a fresh `NAME.1.rotating` and renamed over `NAME.1`
/// (a link planted as `NAME.1` is replaced, never written through), and the log is truncated
/// through the descriptor that was copied.
final class LogRotation {
    /// Files nginx reopens on SIGUSR1.
    static let reopenedByNginx: Set<String> = ["access.log", "error.log"]

    let directory: PinnedDirectory
    let maxBytes: Int
    /// Entries already reported as refused, so each is said once, not twice a second.
    private var reported = Set<String>()

    init(directory: PinnedDirectory, maxBytes: Int) {
        self.directory = directory
        self.maxBytes = maxBytes
    }

    /// Rotates every log over the limit; returns whether nginx must reopen its files. What it
    /// refuses to touch (links, other kinds of file) goes to `warn`, once per name.
    func rotate(warn: (String) -> Void = { _ in }) -> Bool {
        var reopen = false
        for name in directory.names() where name.hasSuffix(".log") || name.hasSuffix(".out") {
            guard let st = directory.status(name) else { continue }
            guard st.st_mode & S_IFMT == S_IFREG else {
                report(name, "\(directory.path)/\(name) is not a regular file (a symbolic link?): not rotated, not followed", warn)
                continue
            }
            guard Int(st.st_size) > maxBytes else { continue }
            do {
                if let previous = directory.status(name + ".1"), previous.st_mode & S_IFMT != S_IFREG {
                    report(name + ".1", "\(directory.path)/\(name).1 was not a regular file (a symbolic link?): replaced, not followed", warn)
                }
                if Self.reopenedByNginx.contains(name) {
                    try directory.rename(name, to: name + ".1")
                    reopen = true
                } else {
                    try copyAndTruncate(name)
                }
            } catch {
                report(name, "cannot rotate \(directory.path)/\(name): \(error)", warn)
            }
        }
        return reopen
    }

    private func copyAndTruncate(_ name: String) throws {
        let from = try directory.openFile(name, O_RDWR)
        defer { close(from) }
        let temporary = name + ".1.rotating"
        let to = try directory.create(temporary, mode: 0o644)
        defer { close(to) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            let written = buffer.withUnsafeBytes { write(to, $0.baseAddress, n) }
            guard written == n else { directory.remove(temporary); throw CommandFailure("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        }
        try directory.rename(temporary, to: name + ".1")
        _ = ftruncate(from, 0)
    }

    private func report(_ name: String, _ message: String, _ warn: (String) -> Void) {
        guard reported.insert(name).inserted else { return }
        warn(message)
    }
}
