import AttestConfig
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// Issue #7 item 18: serve's logs stay under server.logMaxMiB plus one previous generation.
@Suite("LogRotation") struct LogRotationTests {
    @Test("nginx's logs over the limit are renamed to NAME.1 and nginx is asked to reopen them")
    func nginxLogsRenamed() {
        let dir = TemporaryDirectory()
        _ = dir.write("access.log", String(repeating: "a", count: 2000))
        _ = dir.write("access.log.1", "older generation")
        _ = dir.write("error.log", "small")
        let reopen = LogRotation(directory: try! PinnedDirectory.open(dir.path), maxBytes: 1000).rotate()
        #expect(reopen, "nginx must reopen its files")
        #expect(dir.size("access.log") == nil, "renamed away; nginx creates it again on SIGUSR1")
        #expect(dir.size("access.log.1") == 2000, "the previous generation replaces the older one")
        #expect(dir.size("error.log") == 5, "a log under the limit is left alone")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/access.log.2"), "one generation only")
    }

    @Test("a pool's log is copied to NAME.1 and truncated; its writer's next line lands at the start")
    func poolLogsCopiedAndTruncated() {
        let dir = TemporaryDirectory()
        let path = dir.write("attest-validate.log", String(repeating: "v", count: 3000))
        let writer = open(path, O_WRONLY | O_APPEND)
        defer { close(writer) }
        let reopen = LogRotation(directory: try! PinnedDirectory.open(dir.path), maxBytes: 1000).rotate()
        #expect(!reopen, "nothing for nginx to reopen")
        #expect(dir.size("attest-validate.log.1") == 1000, "NAME.1 keeps the newest maxBytes")
        #expect(dir.size("attest-validate.log") == 0)
        _ = write(writer, "next\n", 5)
        #expect(dir.size("attest-validate.log") == 5, "O_APPEND writes continue at the new end, not at offset 3000")
    }

    /// serve keeps one LogRotation (one directory descriptor) for its whole run.
    @Test("the same rotation rotates again when a log grows past the limit again")
    func rotatesEveryTime() throws {
        let dir = TemporaryDirectory()
        let rotation = LogRotation(directory: try PinnedDirectory.open(dir.path), maxBytes: 1000)
        for round in 1...3 {
            _ = dir.write("access.log", String(repeating: "\(round)", count: 2000))
            #expect(rotation.rotate(), "round \(round)")
            #expect(dir.size("access.log.1") == 2000 && dir.size("access.log") == nil, "round \(round)")
        }
    }

    /// Issue #37 F6: the service user owns DATA/log and can make a log sparse and huge
    /// (`truncate -s 500G x.log`); root's copy must not write all of it as real blocks.
    @Test("a 64 MiB sparse log: NAME.1 keeps only its last maxBytes, the log is truncated")
    func sparseLogCopiesOnlyItsEnd() throws {
        let dir = TemporaryDirectory()
        let marker = "the log's last line\n"
        let fd = open(dir.path + "/x.log", O_WRONLY | O_CREAT, 0o644)
        #expect(ftruncate(fd, 64 << 20) == 0)
        #expect(pwrite(fd, marker, marker.utf8.count, (64 << 20) - off_t(marker.utf8.count)) == marker.utf8.count)
        close(fd)
        _ = LogRotation(directory: try PinnedDirectory.open(dir.path), maxBytes: 1 << 20).rotate()
        var st = stat()
        #expect(stat(dir.path + "/x.log.1", &st) == 0)
        #expect(st.st_size <= 1 << 20 && st.st_blocks * 512 <= 1 << 20,
                "x.log.1: \(st.st_size) bytes, \(st.st_blocks * 512) allocated")
        let copy = try #require(FileManager.default.contents(atPath: dir.path + "/x.log.1"))
        #expect(copy.suffix(marker.utf8.count).elementsEqual(marker.utf8), "the file's last bytes are kept")
        #expect(dir.size("x.log") == 0)
    }

    /// What is appended after rotation started is not copied: the copy ends at the size fstat gave.
    @Test("the copy stops at the end of its range, however long the file is")
    func copyStopsAtTheRange() throws {
        let dir = TemporaryDirectory()
        let from = open(dir.write("grown.log",
                                  String(repeating: "a", count: 2000) + String(repeating: "b", count: 1000)), O_RDONLY)
        defer { close(from) }
        let to = open(dir.path + "/copy", O_WRONLY | O_CREAT, 0o644)
        try LogRotation.copy(from, range: 1000..<2000, to: to)
        close(to)
        #expect(try String(contentsOfFile: dir.path + "/copy", encoding: .utf8) == String(repeating: "a", count: 1000))
    }

    @Test("nothing happens under the limit")
    func underLimit() {
        let dir = TemporaryDirectory()
        _ = dir.write("access.log", "x")
        _ = dir.write("attest-refresh.log", "y")
        #expect(!LogRotation(directory: try! PinnedDirectory.open(dir.path), maxBytes: 1000).rotate())
        #expect(dir.size("access.log") == 1 && dir.size("attest-refresh.log") == 1)
    }
}
