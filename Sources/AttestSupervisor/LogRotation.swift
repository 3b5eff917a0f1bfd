import AttestConfig
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
///   the next line lands at the start): lines written during the copy can be lost. `NAME.1`
///   keeps the newest `maxBytes` of the file as it was when rotation started (its size by
///   `fstat` then): the bytes from `size - maxBytes` to `size`, read with `pread`, holes
///   skipped (`SEEK_DATA`, left as holes in the copy). What was written before them, and
///   after rotation started, is lost. So a copy costs root at most `maxBytes` of disk and of
///   reading, whatever the file: a sparse 500 GiB `x.log`, or one grown during the copy,
///   cannot fill the disk as root nor keep the supervisor busy.
/// - Any `*.log` or `*.out` in the directory is rotated, names the service user created
///   included: serve does not list nginx's and the pools' names here, and with the bound a
///   planted name costs root no more than one of serve's own logs.
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
                report(name, "\(directory.path)/\(name) is not a regular file (a symbolic link?): "
                             + "not rotated, not followed", warn)
                continue
            }
            guard Int(st.st_size) > maxBytes else { continue }
            do {
                if let previous = directory.status(name + ".1"), previous.st_mode & S_IFMT != S_IFREG {
                    report(name + ".1", "\(directory.path)/\(name).1 was not a regular file (a symbolic link?): "
                                        + "replaced, not followed", warn)
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
        var st = stat()
        guard fstat(from, &st) == 0 else {
            throw SupervisorError(.logs, "cannot stat \(directory.path)/\(name): \(String(cString: strerror(errno)))")
        }
        let end = off_t(st.st_size)
        let start = max(0, end - off_t(maxBytes))
        let temporary = name + ".1.rotating"
        let to = try directory.create(temporary, mode: 0o644)
        defer { close(to) }
        do { try Self.copy(from, range: start..<end, to: to) } catch {
            directory.remove(temporary)
            throw SupervisorError(.logs, "cannot copy \(directory.path)/\(name) to \(temporary): \(error)")
        }
        try directory.rename(temporary, to: name + ".1")
        _ = ftruncate(from, 0)
    }

    /// Copies `range` of `from` to the start of `to` with `pread`/`pwrite`, stopping at
    /// `range.upperBound` even if `from` grows; holes (`SEEK_DATA`, `SEEK_HOLE`) are not read,
    /// and stay holes in `to`.
    static func copy(_ from: Int32, range: Range<off_t>, to: Int32) throws {
        // Linux's lseek whences; Glibc declares them only under _GNU_SOURCE, so Swift does not see them.
        let SEEK_DATA: Int32 = 3, SEEK_HOLE: Int32 = 4
        func failure(_ what: String) -> SupervisorError {
            SupervisorError(.logs, "\(what): \(String(cString: strerror(errno)))")
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let data = lseek(from, offset, SEEK_DATA)
            if data < 0 && errno == ENXIO { break }  // a hole up to the end of the file
            if data > offset { offset = data; continue }  // (-1 otherwise: no SEEK_DATA here, read on)
            let hole = lseek(from, offset, SEEK_HOLE)
            let want = Int(min(off_t(buffer.count), range.upperBound - offset,
                               hole > offset ? hole - offset : off_t.max))
            let n = buffer.withUnsafeMutableBytes { pread(from, $0.baseAddress, want, offset) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure("read") }
            if n == 0 { break }
            var written = 0
            while written < n {
                let w = buffer.withUnsafeBytes {
                    pwrite(to, $0.baseAddress! + written, n - written, offset - range.lowerBound + off_t(written))
                }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { throw failure("write") }
                written += w
            }
            offset += off_t(n)
        }
        // The copy's length: the range, or less when the file shrank meanwhile; a trailing hole stays one.
        var st = stat()
        let end = fstat(from, &st) == 0 ? max(offset, min(off_t(st.st_size), range.upperBound)) : offset
        guard ftruncate(to, end - range.lowerBound) == 0 else { throw failure("truncate") }
    }

    private func report(_ name: String, _ message: String, _ warn: (String) -> Void) {
        guard reported.insert(name).inserted else { return }
        warn(message)
    }
}
