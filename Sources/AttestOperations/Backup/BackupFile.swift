import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// The backup file format: a data directory's state in one file, written while the stack
/// serves and checked end to end before anything is restored.
///
/// ```
/// "AEBACKUP" (8 bytes) | u8 format (1) | u8 store schema | i64 created (Unix seconds BE) | u32 entries
/// entry: u16 path length | path (UTF-8, relative to the data directory) | u32 mode | u64 length | bytes
/// SHA-256 (32 bytes) of everything before it
/// ```
/// Entries: `config.json`, `secrets/challenge.key`, `jwks.json`, `keys/*`, `keys/apple/*`, `test-ca/*` when
/// present, and `store/durable/data.mdb`, `store/ephemeral/data.mdb` as compacted copies.
/// Only regular files are carried: a symbolic link (or a FIFO, a device) in the data
/// directory is left out and reported, never followed (`Backup.sources`).
/// All integers are big-endian. The file holds secrets: it is written with mode 0600.
public enum BackupFile {
    static let magic = Array("AEBACKUP".utf8)
    public static let formatVersion: UInt8 = 1
    static let chunk = 1 << 20

    public struct Header: Sendable, Equatable {
        public let schema: UInt8
        public let created: Timestamp
        public let entries: Int
    }

    /// Streams entries to a file with a running SHA-256.
    final class Writer {
        private let file: UnsafeMutablePointer<FILE>
        private let hasher = SHA256.Hasher()
        let path: String

        init(path: String) throws {
            unlink(path)
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0, let f = fdopen(fd, "wb") else {
                throw OperationsError(.backupIO, "cannot create \(path): \(String(cString: strerror(errno)))")
            }
            file = f
            self.path = path
        }

        deinit { fclose(file) }

        func write(_ bytes: [UInt8]) throws {
            hasher.update(bytes)
            guard bytes.isEmpty || fwrite(bytes, 1, bytes.count, file) == bytes.count else {
                throw OperationsError(.backupIO, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
        }

        func header(schema: UInt8, created: Timestamp, entries: Int) throws {
            try write(magic + [formatVersion, schema] + be(UInt64(bitPattern: created.seconds), 8)
                      + be(UInt64(entries), 4))
        }

        /// One entry from an open file (`source` names it in errors), in chunks; its mode is the
        /// file's own unless `mode` is given; `progress` gets the fraction written.
        func entry(path relative: String, from fd: Int32, source: String, mode: UInt32? = nil,
                   progress: (Double) -> Void) throws {
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                throw OperationsError(.backupIO, "cannot read \(source): \(String(cString: strerror(errno)))")
            }
            let length = Int(info.st_size)
            let mode = mode ?? UInt32(info.st_mode) & 0o777
            let name = Array(relative.utf8)
            try write(be(UInt64(name.count), 2) + name + be(UInt64(mode), 4) + be(UInt64(length), 8))
            var done = 0
            var buffer = [UInt8](repeating: 0, count: chunk)
            while done < length {
                let n = read(fd, &buffer, min(chunk, length - done))
                guard n > 0 else { throw OperationsError(.backupIO, "\(source) ended early") }
                try write(Array(buffer[..<n]))
                done += n
                progress(Double(done) / Double(max(length, 1)))
            }
        }

        func finish() throws {
            let digest = hasher.finish()
            guard fwrite(digest, 1, digest.count, file) == digest.count, fflush(file) == 0,
                  fsync(fileno(file)) == 0 else {
                throw OperationsError(.backupIO, "cannot finish \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Reads a backup in order, checking the trailing SHA-256 at the end.
    final class Reader {
        private let file: UnsafeMutablePointer<FILE>
        private let hasher = SHA256.Hasher()
        private var remaining: Int
        let path: String

        init(path: String) throws {
            guard let f = fopen(path, "rb") else {
                throw OperationsError(.backupIO, "cannot open \(path): \(String(cString: strerror(errno)))")
            }
            file = f
            self.path = path
            var info = stat()
            stat(path, &info)
            remaining = Int(info.st_size) - SHA256.byteCount
            guard remaining > magic.count + 14 else {
                throw OperationsError(.backupInvalid, "\(path) is too short to be a backup")
            }
        }

        deinit { fclose(file) }

        func read(_ count: Int) throws -> [UInt8] {
            guard count <= remaining else {
                throw OperationsError(.backupInvalid, "\(path) is truncated or not a backup")
            }
            var bytes = [UInt8](repeating: 0, count: count)
            guard count == 0 || fread(&bytes, 1, count, file) == count else {
                throw OperationsError(.backupIO, "cannot read \(path)")
            }
            hasher.update(bytes)
            remaining -= count
            return bytes
        }

        func number(_ width: Int) throws -> UInt64 { try read(width).reduce(0) { $0 << 8 | UInt64($1) } }

        func header() throws -> Header {
            guard try read(magic.count) == magic else {
                throw OperationsError(.backupInvalid, "\(path) is not an AttestEdge backup")
            }
            let format = try read(1)[0]
            guard format == formatVersion else {
                throw OperationsError(.backupInvalid,
                                      "\(path) has backup format \(format); this build reads \(formatVersion)")
            }
            let schema = try read(1)[0]
            let created = Timestamp(seconds: Int64(bitPattern: try number(8)))
            return Header(schema: schema, created: created, entries: Int(try number(4)))
        }

        /// The next entry's path, mode and length; its bytes follow (`copy` or `skip`).
        func entryHeader() throws -> (path: String, mode: UInt32, length: Int) {
            let name = try read(Int(try number(2)))
            let mode = UInt32(try number(4))
            // A damaged length (the top bit set) must fail as a damaged file, not trap.
            guard let length = Int(exactly: try number(8)) else {
                throw OperationsError(.backupInvalid, "\(self.path) is damaged: an entry's length is out of range")
            }
            let path = String(decoding: name, as: UTF8.self)
            guard !path.isEmpty, !path.hasPrefix("/"), !path.split(separator: "/").contains(".."),
                  !path.contains("\0") else {
                throw OperationsError(.backupInvalid, "\(self.path) names an unsafe path \(path.debugDescription)")
            }
            return (path, mode, length)
        }

        /// Passes `length` bytes to `sink` in chunks.
        func copy(_ length: Int, to sink: ([UInt8]) throws -> Void) throws {
            var left = length
            while left > 0 {
                let n = min(chunk, left)
                try sink(try read(n))
                left -= n
            }
        }

        /// Checks that the data is over and the digest matches.
        func finish() throws {
            guard remaining == 0 else {
                throw OperationsError(.backupInvalid, "\(path) has \(remaining) unexpected bytes before its checksum")
            }
            var stored = [UInt8](repeating: 0, count: SHA256.byteCount)
            guard fread(&stored, 1, stored.count, file) == stored.count,
                  constantTimeEqual(stored, hasher.finish()) else {
                throw OperationsError(.backupInvalid, "\(path) fails its SHA-256 check: it is damaged or incomplete")
            }
        }
    }

    static func be(_ value: UInt64, _ width: Int) -> [UInt8] {
        (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }
}
