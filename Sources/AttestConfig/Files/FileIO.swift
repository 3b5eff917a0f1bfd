#if canImport(Glibc)
import Glibc
#endif

/// Small file-system helpers without Foundation (the FastCGI executables avoid it).
public enum FileIO {
    /// The whole file, or `nil` when it does not exist.
    public static func read(_ path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ConfigError.failed("cannot open", path)
        }
        defer { close(fd) }
        return try readAll(fd, path: path)
    }

    /// Everything left to read from `fd`; `path` names it in errors.
    static func readAll(_ fd: Int32, path: String) throws -> [UInt8] {
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw ConfigError.failed("cannot read", path) }
            if n == 0 { return out }
            out += chunk[0..<n]
        }
    }

    /// The bytes of `fd` from offset `start` up to `end` (fewer at the end of the file), read
    /// with `pread`: the descriptor's offset is left alone and nothing past `end` is read.
    static func read(_ fd: Int32, from start: Int, to end: Int, path: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, end - start))
        var filled = 0
        while filled < out.count {
            let n = out.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + filled, $0.count - filled, off_t(start + filled))
            }
            if n < 0 { if errno == EINTR { continue }; throw ConfigError.failed("cannot read", path) }
            if n == 0 { break }
            filled += n
        }
        return Array(out.prefix(filled))
    }

    public static func readText(_ path: String) throws -> String? {
        try read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes `bytes` to a temporary file beside `path`, fsyncs it and renames it over `path`,
    /// so readers see the old or the new content, never a torn one. The temporary file is
    /// created afresh (`O_EXCL | O_NOFOLLOW`, a leftover of its name removed first): a link
    /// planted at that predictable name cannot make a root caller write through it, and the
    /// rename replaces a link at `path` itself.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws {
        let temp = path + ".tmp.\(getpid())"
        unlink(temp)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ConfigError.failed("cannot create", temp) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                let failure = ConfigError.failed("cannot write", temp)
                close(fd)
                unlink(temp)
                throw failure
            }
            offset += n
        }
        fchmod(fd, mode)
        guard fsync(fd) == 0 else { let f = ConfigError.failed("cannot sync", temp); close(fd); unlink(temp); throw f }
        close(fd)
        guard rename(temp, path) == 0 else {
            let f = ConfigError.failed("cannot rename onto", path); unlink(temp); throw f
        }
    }

    public static func writeAtomically(_ path: String, text: String, mode: mode_t = 0o644) throws {
        try writeAtomically(path, Array(text.utf8), mode: mode)
    }

    public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Creates `path` and its parents (mode 0700 for new ones).
    public static func makeDirectories(_ path: String, mode: mode_t = 0o700) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, mode) != 0 && errno != EEXIST { throw ConfigError.failed("cannot create", current) }
        }
    }

    /// Modification time in nanoseconds, or `nil` when the file does not exist.
    public static func modificationTime(_ path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    }

    /// The names in a directory (no `.` or `..`), sorted.
    public static func list(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names = [String]()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// An absolute form of `path` (relative paths are resolved against the working directory).
    public static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path == "." ? cwd : cwd + "/" + (path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
    }
}
