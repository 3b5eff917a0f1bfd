internal import CMetrics
import Glibc

/// One pool's counters in a file every process of the pool maps shared
/// (`RUN/metrics/<pool>.metrics`): the master creates or opens it before it forks, the workers
/// inherit the mapping, and each counts with relaxed atomic adds (`CMetrics`), so the request
/// path takes no lock and makes no system call. The monitor pool reads every pool's file at
/// each scrape (`read`).
///
/// The file (`fileBytes` long, mode 0600, owned by the service user):
/// ```
/// offset 0   8 bytes  magic "AEMETRIC"
/// offset 8   u32 LE   version (`version`)
/// offset 12  u32 LE   slot count (`MetricsLayout.slotCount`)
/// offset 16  48 bytes zero
/// offset 64  slot count × u64 (native byte order, little-endian on every host we build for):
///            the counters, laid out as `MetricsLayout` says
/// ```
///
/// - Reload: a pool's SIGHUP re-executes its master, which opens the same file again: counters
///   stay monotonic, and the old workers (still mapping the same file) count into it until
///   they stop, so nothing they do meanwhile is lost.
/// - Anything else at the path (missing, not a regular file, a symlink, another owner, hard
///   links, another size, magic, version or slot count) is replaced by a fresh zeroed file,
///   renamed into place, never trusted or written through. Readers check the same and bound
///   every read by `fileBytes`; the file is never truncated in place (a replacement is a new
///   inode), so a mapping never loses its pages.
public final class MetricsSegment: @unchecked Sendable {
    public static let magic = Array("AEMETRIC".utf8)
    public static let version: UInt32 = 8
    public static let headerBytes = 64
    public static var fileBytes: Int { headerBytes + MetricsLayout.slotCount * 8 }

    public let path: String
    /// Why the file at `path` was replaced when this segment was opened; `nil` when it was
    /// reused as it was or newly made.
    public let replaced: String?
    private let slots: UnsafeMutablePointer<UInt64>

    private init(path: String, replaced: String?, base: UnsafeMutableRawPointer) {
        self.path = path
        self.replaced = replaced
        slots = (base + Self.headerBytes).assumingMemoryBound(to: UInt64.self)
    }

    /// `RUN/metrics`, made (0700) if missing; refused when it is not a directory of ours.
    public static func directory(run: String) throws(MetricsError) -> String {
        let directory = run + "/metrics"
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw MetricsError("cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else {
            throw MetricsError("\(directory) is not a directory owned by uid \(geteuid())")
        }
        return directory
    }

    /// The segment file of `name` in `directory` (see `directory(run:)`).
    public static func path(directory: String, name: String) -> String { directory + "/\(name).metrics" }

    /// Opens the segment at `path`, replacing whatever is there unless it is one of ours of
    /// this layout. The mapping lives as long as the process.
    public static func open(path: String) throws(MetricsError) -> MetricsSegment {
        var problem: String
        switch map(path, writable: true) {
        case .success(let base): return MetricsSegment(path: path, replaced: nil, base: base)
        case .failure(let why): problem = why.reason
        }
        let temporary = path + ".new.\(getpid())"
        unlink(temporary)
        let fd = Glibc.open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw MetricsError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // Blocks allocated now, not a sparse file: a worker's first write to a page of a hole
        // on a full file system is a SIGBUS (the fault suite's full tmpfs killed refresh workers).
        guard posix_fallocate(fd, 0, off_t(fileBytes)) == 0,
              let base = mmap(nil, fileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), base != MAP_FAILED else {
            unlink(temporary)
            throw MetricsError("cannot size or map \(temporary): \(String(cString: strerror(errno)))")
        }
        writeHeader(base)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw MetricsError("cannot rename \(temporary) to \(path): \(reason)")
        }
        if problem == "missing" { problem = "" }
        return MetricsSegment(path: path, replaced: problem.isEmpty ? nil : problem, base: base)
    }

    /// A copy of the counters of the segment at `path`, read with relaxed atomic loads
    /// (`MetricsLayout.slotCount` of them); `nil` when there is none of ours of this layout.
    public static func read(path: String) -> [UInt64]? {
        guard case .success(let base) = map(path, writable: false) else { return nil }
        defer { munmap(base, fileBytes) }
        let slots = UnsafePointer((base + headerBytes).assumingMemoryBound(to: UInt64.self))
        return (0..<MetricsLayout.slotCount).map { attest_metrics_load(slots, $0) }
    }

    public func add(_ slot: Int, _ value: UInt64 = 1) {
        attest_metrics_add(slots, slot, value)
    }

    public func set(_ slot: Int, _ value: UInt64) {
        attest_metrics_store(slots, slot, value)
    }

    public func load(_ slot: Int) -> UInt64 {
        attest_metrics_load(slots, slot)
    }

    /// Maps the file at `path` if it is a segment of ours of this layout; else why not
    /// ("missing" when there is no file).
    private static func map(_ path: String, writable: Bool) -> Result<UnsafeMutableRawPointer, MapFailure> {
        // O_NONBLOCK: a FIFO put at the path must not hang the open.
        let fd = Glibc.open(path, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = errno == ENOENT ? "missing" : "cannot open: \(String(cString: strerror(errno)))"
            return .failure(MapFailure(reason))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return .failure("not a regular file") }
        guard info.st_uid == geteuid() else { return .failure("owned by uid \(info.st_uid), not \(geteuid())") }
        guard info.st_nlink == 1 else { return .failure("\(info.st_nlink) hard links") }
        guard info.st_size == off_t(fileBytes) else { return .failure("\(info.st_size) bytes, not \(fileBytes)") }
        // A sparse file (one planted, or made by another build) gets its blocks before it is
        // written through a mapping: see `open`.
        if writable, posix_fallocate(fd, 0, off_t(fileBytes)) != 0 { return .failure("cannot allocate its blocks") }
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let base = mmap(nil, fileBytes, protection, MAP_SHARED, fd, 0), base != MAP_FAILED else {
            return .failure(MapFailure("cannot map: \(String(cString: strerror(errno)))"))
        }
        if let problem = headerProblem(UnsafeRawPointer(base)) {
            munmap(base, fileBytes)
            return .failure(MapFailure(problem))
        }
        return .success(base)
    }

    /// What is wrong with the header at `base` (`headerBytes` readable), if anything.
    static func headerProblem(_ base: UnsafeRawPointer) -> String? {
        let bytes = UnsafeRawBufferPointer(start: base, count: headerBytes)
        guard Array(bytes[0..<8]) == magic else { return "not a metrics segment (magic)" }
        let version = bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self).littleEndian
        guard version == Self.version else { return "version \(version), not \(Self.version)" }
        let count = bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self).littleEndian
        guard count == UInt32(MetricsLayout.slotCount) else {
            return "\(count) slots, not \(MetricsLayout.slotCount)"
        }
        return nil
    }

    static func writeHeader(_ base: UnsafeMutableRawPointer) {
        let bytes = UnsafeMutableRawBufferPointer(start: base, count: headerBytes)
        for (i, byte) in magic.enumerated() { bytes[i] = byte }
        bytes.storeBytes(of: version.littleEndian, toByteOffset: 8, as: UInt32.self)
        bytes.storeBytes(of: UInt32(MetricsLayout.slotCount).littleEndian, toByteOffset: 12, as: UInt32.self)
    }

    struct MapFailure: Error, ExpressibleByStringInterpolation {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        init(stringLiteral value: String) { reason = value }
    }
}

/// A segment that cannot be made or opened (the pool then serves without metrics).
public struct MetricsError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
