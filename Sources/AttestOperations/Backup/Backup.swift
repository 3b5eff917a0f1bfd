import AttestConfig
import AttestCore
import AttestStore
#if canImport(Glibc)
import Glibc
#endif

/// Taking and restoring backups of a data directory (`BackupFile` is the format).
///
/// A backup is taken while the stack serves: each LMDB environment is copied compacted from
/// one read snapshot (`mdb_env_copy2`), so it is consistent on its own; the two are taken one
/// after the other (the ephemeral one only holds used challenges and rate windows). Restoring
/// reads the whole file and checks its SHA-256 before writing anything.
public enum Backup {
    public struct Summary: Sendable {
        public let header: BackupFile.Header
        public let bytes: Int
        /// Entries of the data directory left out, each with why: symbolic links and anything
        /// but a regular file are never followed or read (backup runs as root; the data
        /// directory is the service user's).
        public var skipped: [String] = []
    }

    /// The files of `data` a backup carries besides the store, relative to it, in order, each
    /// opened through `PinnedDirectory` (no link followed, regular files only); what was
    /// refused goes to `skipped`. The caller closes the descriptors.
    static func sources(_ data: DataDirectory) throws -> (files: [(name: String, fd: Int32)], skipped: [String]) {
        let root = try PinnedDirectory.open(data.path)
        var names = ["config.json", "secrets/challenge.key", "jwks.json"]
        var skipped = [String]()
        // keys/apple holds the teams' DeviceCheck keys (`AppleKeyStore`): its own entries, not
        // a file of keys/ (which would be skipped as not regular).
        let listed: [(String, (String) -> Bool)] = [
            ("keys", { $0 != "lock" && $0 != "apple" && !$0.hasSuffix(".tmp") }),
            ("keys/apple", { !$0.hasSuffix(".new") }),
            ("test-ca", { _ in true }),
        ]
        for (dir, keep) in listed {
            guard root.status(dir) != nil else { continue }
            do {
                names += try root.directory(dir).names().filter(keep).map { dir + "/" + $0 }
            } catch {
                skipped.append("\(dir)/: \(error)")
            }
        }
        var files = [(name: String, fd: Int32)]()
        for name in names {
            do {
                let fd = try root.openFile(name, O_RDONLY)
                files.append((name, fd))
            } catch let failure as ConfigError where failure.errorNumber == ENOENT {
                continue
            } catch {
                skipped.append("\(name): \(error)")
            }
        }
        return (files, skipped)
    }

    /// Writes a backup of `data` (whose store is `store`, open and possibly serving) to `path`.
    public static func take(data: DataDirectory, store: Store, to path: String, now: Timestamp,
                            progress: (String, Double) -> Void = { _, _ in }) throws -> Summary {
        var template = Array((path + ".parts-XXXXXX").utf8CString)
        guard let scratch = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) })
                  .map({ String(cString: $0) }) else {
            throw OperationsError(.backupIO, "cannot create a scratch directory beside \(path): "
                                             + "\(String(cString: strerror(errno)))")
        }
        defer {
            for env in ["durable", "ephemeral"] { unlink(scratch + "/\(env)/data.mdb"); rmdir(scratch + "/\(env)") }
            rmdir(scratch)
        }
        for env in [Database.Environment.durable, .ephemeral] {
            progress("copying the \(env.rawValue) store", 0)
            try FileIO.makeDirectories(scratch + "/\(env.rawValue)")
            try store.copyCompacted(env, to: scratch + "/\(env.rawValue)")
        }
        let (opened, skipped) = try Self.sources(data)
        defer { for source in opened { close(source.fd) } }
        let temporary = path + ".tmp"
        let writer = try BackupFile.Writer(path: temporary)
        do {
            try writer.header(schema: Store.schemaVersion, created: now, entries: opened.count + 2)
            for source in opened {
                try writer.entry(path: source.name, from: source.fd, source: data.path + "/" + source.name) { _ in }
            }
            for env in ["durable", "ephemeral"] {
                let fd = open(scratch + "/\(env)/data.mdb", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    throw OperationsError(.backupIO, "cannot read \(scratch)/\(env)/data.mdb: "
                                                     + "\(String(cString: strerror(errno)))")
                }
                defer { close(fd) }
                try writer.entry(path: "store/\(env)/data.mdb", from: fd, source: scratch + "/\(env)/data.mdb",
                                 mode: 0o600) { progress("writing the \(env) store", $0) }
            }
            try writer.finish()
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            throw OperationsError(.backupIO, "cannot rename \(temporary) to \(path)")
        }
        var info = stat()
        stat(path, &info)
        return Summary(header: BackupFile.Header(schema: Store.schemaVersion, created: now, entries: opened.count + 2),
                       bytes: Int(info.st_size), skipped: skipped)
    }

    /// Reads all of `path` and checks it; the header when it is intact.
    public static func verify(_ path: String) throws -> BackupFile.Header {
        let reader = try BackupFile.Reader(path: path)
        let header = try reader.header()
        for _ in 0..<header.entries {
            let entry = try reader.entryHeader()
            try reader.copy(entry.length) { _ in }
        }
        try reader.finish()
        return header
    }

    /// Restores `path` into `data` (checked in full first). Existing files of the same names
    /// are replaced, each by an atomic rename; the caller decides whether that is allowed.
    public static func restore(from path: String, into data: DataDirectory,
                               progress: (String, Double) -> Void = { _, _ in }) throws -> Summary {
        progress("checking \(path)", 0)
        let header = try verify(path)
        guard header.schema == Store.schemaVersion else {
            throw OperationsError(.backupInvalid, "\(path) holds store schema \(header.schema); this build reads "
                                                  + "\(Store.schemaVersion)")
        }
        try data.makeLayout()
        // Everything below the data directory goes through descriptors (PinnedDirectory): a
        // link planted where a directory, a temporary file or lock.mdb is expected is replaced
        // or refused, never followed.
        let root = try PinnedDirectory.open(data.path)
        let reader = try BackupFile.Reader(path: path)
        _ = try reader.header()
        var bytes = 0
        for _ in 0..<header.entries {
            let entry = try reader.entryHeader()
            let parts = entry.path.split(separator: "/").map(String.init)
            let dir = try parts.count == 1 ? root : root.directory(parts.dropLast().joined(separator: "/"),
                                                                   create: 0o700)
            let name = parts.last!
            let temporary = name + ".restore-tmp"
            let fd = try dir.create(temporary, mode: mode_t(entry.mode & 0o777))
            var written = 0
            do {
                try reader.copy(entry.length) { chunk in
                    guard chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == chunk.count else {
                        throw OperationsError(.backupIO, "cannot write \(dir.path)/\(temporary): "
                                                         + "\(String(cString: strerror(errno)))")
                    }
                    written += chunk.count
                    if entry.length > 1 << 20 {
                        progress("restoring \(entry.path)", Double(written) / Double(entry.length))
                    }
                }
                fchmod(fd, mode_t(entry.mode & 0o777))
                guard fsync(fd) == 0 else { throw OperationsError(.backupIO, "cannot sync \(dir.path)/\(temporary)") }
            } catch {
                close(fd)
                dir.remove(temporary)
                throw error
            }
            close(fd)
            // The copy restarts LMDB's transaction ids; the durability barrier resets a
            // sync.state left from the replaced file when the store is next opened.
            if entry.path.hasPrefix("store/") { dir.remove("lock.mdb") }
            try dir.rename(temporary, to: name)
            bytes += entry.length
        }
        try reader.finish()
        // The restored ephemeral environment does not know the challenges used since the
        // backup was taken: without its boot record the next process to open the store
        // recreates it empty and refuses every challenge issued before then as expired.
        try root.directory("store").remove("ephemeral.boot")
        return Summary(header: header, bytes: bytes)
    }
}
