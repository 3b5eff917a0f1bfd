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
    }

    /// The files of `data` a backup carries besides the store, relative to it, in order.
    static func files(_ data: DataDirectory) -> [String] {
        var names = ["config.json", "secrets/challenge.key", "jwks.json"]
        names += FileIO.list(data.keysDirectory).filter { $0 != "lock" && !$0.hasSuffix(".tmp") }.map { "keys/" + $0 }
        names += FileIO.list(data.testCADirectory).map { "test-ca/" + $0 }
        return names.filter { FileIO.exists(data.path + "/" + $0) }
    }

    static func mode(_ path: String) -> UInt32 {
        var info = stat()
        return stat(path, &info) == 0 ? UInt32(info.st_mode) & 0o777 : 0o600
    }

    /// Writes a backup of `data` (whose store is `store`, open and possibly serving) to `path`.
    public static func take(data: DataDirectory, store: Store, to path: String, now: Timestamp,
                            progress: (String, Double) -> Void = { _, _ in }) throws -> Summary {
        var template = Array((path + ".parts-XXXXXX").utf8CString)
        guard let scratch = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else {
            throw BackupFile.Failure("cannot create a scratch directory beside \(path): \(String(cString: strerror(errno)))")
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
        let names = files(data)
        let temporary = path + ".tmp"
        let writer = try BackupFile.Writer(path: temporary)
        do {
            try writer.header(schema: Store.schemaVersion, created: now, entries: names.count + 2)
            for name in names {
                try writer.entry(path: name, from: data.path + "/" + name, mode: mode(data.path + "/" + name)) { _ in }
            }
            for env in ["durable", "ephemeral"] {
                try writer.entry(path: "store/\(env)/data.mdb", from: scratch + "/\(env)/data.mdb", mode: 0o600) { progress("writing the \(env) store", $0) }
            }
            try writer.finish()
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else { throw BackupFile.Failure("cannot rename \(temporary) to \(path)") }
        var info = stat()
        stat(path, &info)
        return Summary(header: BackupFile.Header(schema: Store.schemaVersion, created: now, entries: names.count + 2), bytes: Int(info.st_size))
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
    public static func restore(from path: String, into data: DataDirectory, progress: (String, Double) -> Void = { _, _ in }) throws -> Summary {
        progress("checking \(path)", 0)
        let header = try verify(path)
        guard header.schema == Store.schemaVersion else {
            throw BackupFile.Failure("\(path) holds store schema \(header.schema); this build reads \(Store.schemaVersion)")
        }
        try data.makeLayout()
        let reader = try BackupFile.Reader(path: path)
        _ = try reader.header()
        var bytes = 0
        for _ in 0..<header.entries {
            let entry = try reader.entryHeader()
            let target = data.path + "/" + entry.path
            try FileIO.makeDirectories(String(target[..<target.lastIndex(of: "/")!]))
            let temporary = target + ".restore-tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(entry.mode & 0o777))
            guard fd >= 0 else { throw BackupFile.Failure("cannot write \(temporary): \(String(cString: strerror(errno)))") }
            var written = 0
            do {
                try reader.copy(entry.length) { chunk in
                    guard chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == chunk.count else {
                        throw BackupFile.Failure("cannot write \(temporary): \(String(cString: strerror(errno)))")
                    }
                    written += chunk.count
                    if entry.length > 1 << 20 { progress("restoring \(entry.path)", Double(written) / Double(entry.length)) }
                }
                guard fsync(fd) == 0 else { throw BackupFile.Failure("cannot sync \(temporary)") }
            } catch {
                close(fd)
                unlink(temporary)
                throw error
            }
            close(fd)
            chmod(temporary, mode_t(entry.mode & 0o777))
            // The copy restarts LMDB's transaction ids; the durability barrier resets a
            // sync.state left from the replaced file when the store is next opened.
            if entry.path.hasPrefix("store/") { unlink(String(target.dropLast("data.mdb".count)) + "lock.mdb") }
            guard rename(temporary, target) == 0 else { throw BackupFile.Failure("cannot rename \(temporary) to \(target)") }
            bytes += entry.length
        }
        try reader.finish()
        // The restored ephemeral environment does not know the challenges used since the
        // backup was taken: without its boot record the next process to open the store
        // recreates it empty and refuses every challenge issued before then as expired.
        unlink(data.storeDirectory + "/ephemeral.boot")
        return Summary(header: header, bytes: bytes)
    }
}
