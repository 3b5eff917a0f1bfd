#if canImport(Glibc)
import Glibc
#endif

/// A directory opened once, whose entries are opened relative to its descriptor and never
/// through a symbolic link: how a process running as root (`attestctl serve`, `backup`,
/// `restore`) touches files under a data directory. The data directory belongs to the service
/// user, so anything in it may have been planted by an attacker with that user's shell: a link
/// `log/x.log.1 → /etc/passwd`, a FIFO where a key was, a directory swapped for a link.
///
/// - `open(path)` resolves `path` normally (root chose it); `directory(_:)` then opens each
///   component below it with `O_DIRECTORY | O_NOFOLLOW`, so a link anywhere below is refused.
/// - Entries are opened with `O_NOFOLLOW | O_NONBLOCK` (a planted FIFO cannot hang root) and
///   refused unless `fstat` says a regular file; a file opened for writing must also have a
///   single link (a hard link to someone else's file is refused, before `O_TRUNC` applies).
/// - Reads are bounded: `read(_:atMost:)` refuses a file past its limit from its size, and
///   `tail(_:bytes:)` reads only the end, so a sparse terabyte planted as a pid file or a log
///   costs root neither memory nor time.
/// - Creating goes through `O_EXCL`; replacing goes through a rename in this directory,
///   which replaces a link itself, never what it points to.
/// Refusals throw `ConfigError` (`refused`) naming the path and why ("a symbolic link, not followed").
public final class PinnedDirectory {
    /// The path it was opened at, for messages and for programs that need a path.
    public let path: String
    /// The directory's descriptor (`O_DIRECTORY | O_CLOEXEC`), closed with the value.
    public let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Opens the directory at `path`, which the caller trusts (links in it are followed).
    public static func open(_ path: String) throws -> PinnedDirectory {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw ConfigError.failed("cannot open the directory", path) }
        return PinnedDirectory(path: path, descriptor: fd)
    }

    /// The directory `relative` (one or more `/`-separated names) below this one, each
    /// component opened without following a link; created (mode `create`) where missing
    /// when `create` is given.
    public func directory(_ relative: String, create: mode_t? = nil) throws -> PinnedDirectory {
        var current = self
        for name in try Self.components(relative) {
            if let mode = create, mkdirat(current.descriptor, name, mode) != 0, errno != EEXIST {
                throw ConfigError.failed("cannot create", current.path + "/" + name)
            }
            let fd = openat(current.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { throw Self.refusal(current.path + "/" + name) }
            current = PinnedDirectory(path: current.path + "/" + name, descriptor: fd)
        }
        return current
    }

    /// Opens the regular file `relative` (its directories as `directory(_:)` does) with
    /// `flags` (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` added; `O_NONBLOCK` is cleared again
    /// once it is known to be a regular file); returns the descriptor, which the caller closes.
    /// `O_TRUNC` is applied (`ftruncate`) only after the checks: a refused file keeps its content.
    /// - Throws: when it is a link, not a regular file, or (opened for writing) has more than one link.
    public func openFile(_ relative: String, _ flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        let (dir, name) = try parent(of: relative)
        let fd = openat(dir.descriptor, name, (flags & ~O_TRUNC) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Self.refusal(dir.path + "/" + name) }
        var st = stat()
        let writing = flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, !writing || st.st_nlink == 1 else {
            close(fd)
            throw ConfigError(.refused, "refusing \(dir.path)/\(name): "
                                 + (st.st_mode & S_IFMT != S_IFREG ? "not a regular file"
                                                                   : "it has \(st.st_nlink) hard links"))
        }
        if flags & O_TRUNC != 0, ftruncate(fd, 0) != 0 {
            let failure = ConfigError.failed("cannot truncate", dir.path + "/" + name)
            close(fd)
            throw failure
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// The regular file `relative`, or `nil` when it does not exist; for files root expects to
    /// be small (a pid file, a status line).
    /// - Throws: `ConfigError` (`refused`, `errorNumber` `EFBIG`) when it holds more than `limit` bytes (by its
    ///   size, so nothing is read; or by what was read, a file growing meanwhile).
    public func read(_ relative: String, atMost limit: Int) throws -> [UInt8]? {
        guard let fd = try openForReading(relative) else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ConfigError.failed("cannot stat", path + "/" + relative) }
        let tooLarge = ConfigError(.refused, "refusing \(path)/\(relative): larger than \(limit) bytes",
                                   errorNumber: EFBIG)
        guard Int(st.st_size) <= limit else { throw tooLarge }
        let bytes = try FileIO.read(fd, from: 0, to: limit + 1, path: path + "/" + relative)
        guard bytes.count <= limit else { throw tooLarge }
        return bytes
    }

    /// The last `bytes` bytes (at most) of the regular file `relative` as its size was when
    /// opened, read from that offset: the rest of the file is never read. `nil` when it does
    /// not exist. The first line may be cut.
    public func tail(_ relative: String, bytes: Int) throws -> [UInt8]? {
        guard let fd = try openForReading(relative) else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ConfigError.failed("cannot stat", path + "/" + relative) }
        let end = Int(st.st_size)
        return try FileIO.read(fd, from: max(0, end - bytes), to: end, path: path + "/" + relative)
    }

    private func openForReading(_ relative: String) throws -> Int32? {
        do {
            return try openFile(relative, O_RDONLY)
        } catch let failure as ConfigError where failure.errorNumber == ENOENT {
            return nil
        }
    }

    /// Creates `name` here afresh (`O_CREAT | O_EXCL`; a leftover of that name, link or file,
    /// is removed first) for writing; returns the descriptor.
    public func create(_ name: String, mode: mode_t) throws -> Int32 {
        guard try Self.components(name).count == 1 else {
            throw ConfigError(.refused, "not a name in \(path): \(name.debugDescription)")
        }
        unlinkat(descriptor, name, 0)
        return try openFile(name, O_WRONLY | O_CREAT | O_EXCL, mode: mode)
    }

    /// `lstat` of `name` here: what the entry itself is (a link is a link), `nil` when absent.
    public func status(_ name: String) -> stat? {
        var st = stat()
        return fstatat(descriptor, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st : nil
    }

    /// Renames `from` to `to`, both in this directory; `to`, a link included, is replaced.
    public func rename(_ from: String, to: String) throws {
        guard renameat(descriptor, from, descriptor, to) == 0 else {
            throw ConfigError.failed("cannot rename \(path)/\(from) to", to)
        }
    }

    /// Removes the entry `name` (a link itself, never its target); `true` when it is gone.
    @discardableResult
    public func remove(_ name: String) -> Bool { unlinkat(descriptor, name, 0) == 0 || errno == ENOENT }

    /// The names in it (no `.` or `..`), sorted; read afresh at each call.
    public func names() -> [String] {
        let fd = dup(descriptor)
        guard fd >= 0, let dir = fdopendir(fd) else { return [] }
        defer { closedir(dir) }
        // The duplicate shares the descriptor's offset, left at the end by the previous listing.
        rewinddir(dir)
        var names = [String]()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The directory holding `relative` and its last component.
    private func parent(of relative: String) throws -> (PinnedDirectory, String) {
        let parts = try Self.components(relative)
        let dir = try parts.count == 1 ? self : directory(parts.dropLast().joined(separator: "/"))
        return (dir, parts.last!)
    }

    /// The names of a relative path; `..`, `.`, empty and absolute paths are refused.
    private static func components(_ relative: String) throws -> [String] {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw ConfigError(.refused, "not a relative path below the directory: \(relative.debugDescription)")
        }
        return parts
    }

    /// The error for a failed `openat`: a link says so (ELOOP, or ENOTDIR for a link where a
    /// directory was expected), anything else carries `strerror` and its `errno`.
    private static func refusal(_ path: String) -> ConfigError {
        let failure = ConfigError.failed("cannot open", path)
        var st = stat()
        if failure.errorNumber == ELOOP
            || (failure.errorNumber == ENOTDIR && lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK) {
            return ConfigError(.refused, "refusing \(path): a symbolic link, not followed", errorNumber: ELOOP)
        }
        return failure
    }
}
