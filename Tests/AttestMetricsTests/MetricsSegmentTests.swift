import AttestMetrics
import Glibc
import Testing

@Suite final class MetricsSegmentTests {
    let directory: String

    init() throws {
        var template = Array("/tmp/attest-metrics-tests.XXXXXX".utf8CString)
        directory = String(cString: try #require(mkdtemp(&template)))
    }

    deinit {
        _ = system("rm -rf '\(directory)'")
    }

    var path: String { directory + "/refresh.metrics" }

    /// The header as docs and `MetricsSegment` say, the slots after it, nothing else in the file.
    @Test func layoutOnDisk() throws {
        let segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced == nil)
        segment.add(MetricsLayout.poolRestarts, 7)
        let bytes = try readFile(path)
        #expect(bytes.count == 64 + MetricsLayout.slotCount * 8)
        #expect(MetricsSegment.fileBytes == bytes.count)
        #expect(Array(bytes[0..<8]) == Array("AEMETRIC".utf8))
        #expect(Array(bytes[8..<12]) == [8, 0, 0, 0])
        let count = UInt32(MetricsLayout.slotCount)
        #expect(Array(bytes[12..<16]) == [UInt8(count & 0xff), UInt8(count >> 8 & 0xff), 0, 0])
        #expect(Array(bytes[16..<64]) == [UInt8](repeating: 0, count: 48))
        // Slot 1 (restarts) at offset 64 + 8.
        #expect(Array(bytes[72..<80]) == [7, 0, 0, 0, 0, 0, 0, 0])
        var info = stat()
        let called = stat(path, &info)
        #expect(called == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    /// The families' slot ranges follow one another without overlap, in the documented order.
    @Test func slotRangesAreDisjoint() {
        let L = MetricsLayout.self
        #expect(L.requests == 8)
        #expect(L.durations == L.requests + L.endpoints.count * 500)
        #expect(L.durationStride == 14)
        #expect(L.verificationFailures == L.durations + L.endpoints.count * 14)
        #expect(L.refreshOutcomeSlots == L.verificationFailures + L.verificationSteps.count)
        #expect(L.rateLimited == L.refreshOutcomeSlots + 5)
        #expect(L.groupCommitSizes == L.rateLimited + L.rateBuckets.count)
        #expect(L.syncDurations == L.groupCommitSizes + 10)
        #expect(L.webhookAttempts == L.syncDurations + 15)
        #expect(L.receiptVerifications == L.webhookAttempts + 5)
        #expect(L.receiptRedemptions == L.receiptVerifications + 3)
        #expect(L.flagStreamAuths == L.receiptRedemptions + 12)
        #expect(L.flagPublishes == L.flagStreamAuths + 5)
        #expect(L.slotCount == L.flagPublishes + 2)
        #expect(L.requestSlot(endpoint: 0, status: 100) == 8)
        #expect(L.endpoints.count == 26)
        #expect(L.requestSlot(endpoint: 25, status: 599) == L.durations - 1)
        #expect(L.requestSlot(endpoint: 0, status: 600) == nil)
        #expect(L.requestSlot(endpoint: 0, status: 99) == nil)
        #expect(L.durationLabels.count == L.durationBoundsMicroseconds.count)
        #expect(L.syncLabels.count == L.syncBoundsMicroseconds.count)
        #expect(L.groupSizeLabels.count == L.groupSizeBounds.count)
        for (label, bound) in zip(L.durationLabels, L.durationBoundsMicroseconds) {
            #expect(abs((Double(label)! * 1e6) - (Double(bound))) < 1e-6)
        }
        for (label, bound) in zip(L.syncLabels, L.syncBoundsMicroseconds) {
            #expect(abs((Double(label)! * 1e6) - (Double(bound))) < 1e-6)
        }
        #expect(L.bucket(1000, L.durationBoundsMicroseconds) == 0)
        #expect(L.bucket(1001, L.durationBoundsMicroseconds) == 1)
        #expect(L.bucket(3_000_000, L.durationBoundsMicroseconds) == 11)
    }

    /// attest-receipts counts each of Apple's answers under its code; a code not listed is `other`.
    @Test func receiptRedemptionsCountByStatus() throws {
        let segment = try MetricsSegment.open(path: path)
        for status in ["200", "200", "429", "error", "418"] { segment.recordReceiptRedemption(status: status) }
        let slots = try #require(MetricsSegment.read(path: path))
        let L = MetricsLayout.self
        let counted = Dictionary(uniqueKeysWithValues: L.receiptStatuses.enumerated().map {
            ($1, slots[L.receiptRedemptions + $0])
        })
        #expect(counted["200"] == 2 && counted["429"] == 1 && counted["error"] == 1 && counted["other"] == 1)
        #expect(counted.values.reduce(0, +) == 5)
    }

    /// Workers forked from the process that opened the segment count into one table; every add
    /// arrives, with no lock.
    @Test func concurrentIncrementsFromForkedProcessesSumExactly() throws {
        let segment = try MetricsSegment.open(path: path)
        let processes = 4, rounds = 200_000
        var children = [pid_t]()
        for _ in 0..<processes {
            let pid = fork()
            if pid == 0 {
                for _ in 0..<rounds {
                    segment.add(MetricsLayout.poolRestarts)
                    segment.recordRequest(endpoint: 2, status: 200, microseconds: 1500)
                }
                _exit(0)
            }
            #expect(pid > 0)
            children.append(pid)
        }
        for pid in children {
            var status: Int32 = 0
            let called = waitpid(pid, &status, 0)
            #expect(called == pid)
            #expect(status == 0)
        }
        let total = UInt64(processes * rounds)
        let slots = try #require(MetricsSegment.read(path: path))
        #expect(slots[MetricsLayout.poolRestarts] == total)
        #expect(slots[MetricsLayout.requestSlot(endpoint: 2, status: 200)!] == total)
        let histogram = MetricsLayout.durations + 2 * MetricsLayout.durationStride
        #expect(slots[histogram + 1] == total, "1.5 ms falls in the 0.0025 bucket")
        #expect(slots[histogram + 12] == total * 1500, "the sum, in µs")
        #expect(slots[histogram + 13] == total)
    }

    /// A reload re-executes the master, which opens the same file: what was counted stays, and
    /// the old workers' mapping and the new one count into the same table.
    @Test func reopenKeepsCountsAndSharesThem() throws {
        let old = try MetricsSegment.open(path: path)
        old.add(MetricsLayout.poolReloads, 5)
        let new = try MetricsSegment.open(path: path)
        #expect(new.replaced == nil)
        #expect(new.load(MetricsLayout.poolReloads) == 5)
        old.add(MetricsLayout.poolReloads)
        new.add(MetricsLayout.poolReloads)
        #expect(MetricsSegment.read(path: path)?[MetricsLayout.poolReloads] == 7)
    }

    /// Validate's receipt checks land in their result's slot; an unknown result is not counted.
    @Test func receiptVerificationsAreCountedByResult() throws {
        let segment = try MetricsSegment.open(path: path)
        for result in ["valid", "valid", "invalid", "absent", "bogus"] { segment.recordReceiptVerification(result) }
        let L = MetricsLayout.self
        #expect((0..<3).map { segment.load(L.receiptVerifications + $0) } == [2, 1, 1])
        #expect(MetricsExposition.render([MetricsSnapshot(name: "validate", isPool: true,
                                                          slots: try #require(MetricsSegment.read(path: path)))],
                                         ScrapeGauges())
                    .contains("attestedge_receipt_verifications_total{result=\"valid\"} 2\n"))
    }

    /// The stream auth's answers count by the outcome their status says (2xx allowed, 401, 403,
    /// another 4xx bad_request, anything else error); publishes as ok or failed.
    @Test func flagStreamAuthsAndPublishesAreCountedByOutcome() throws {
        let segment = try MetricsSegment.open(path: path)
        for status in [204, 204, 200, 401, 403, 400, 405, 500, 503, 302] {
            segment.recordFlagStreamAuth(status: status)
        }
        for ok in [true, true, true, false] { segment.recordFlagPublish(ok: ok) }
        let L = MetricsLayout.self
        #expect(L.flagStreamAuthOutcomes.indices.map { segment.load(L.flagStreamAuths + $0) } == [3, 1, 1, 2, 3])
        #expect(L.flagPublishOutcomes.indices.map { segment.load(L.flagPublishes + $0) } == [3, 1])
        let text = MetricsExposition.render([MetricsSnapshot(name: "flags", isPool: true,
                                                             slots: try #require(MetricsSegment.read(path: path)))],
                                            ScrapeGauges())
        #expect(text.contains("attestedge_flag_stream_auth_total{outcome=\"bad_request\"} 2\n"))
        #expect(text.contains("attestedge_flag_publishes_total{outcome=\"failed\"} 1\n"))
    }

    /// Every block of the file is allocated, a new file's and a sparse one's found in place: a
    /// worker's first write into a hole of a mapping on a full file system is a SIGBUS (the
    /// fault suite's full tmpfs killed refresh workers before).
    @Test func theFileHasNoHoles() throws {
        _ = try MetricsSegment.open(path: path)
        func allocated() -> Int {
            var info = stat()
            return stat(path, &info) == 0 ? Int(info.st_blocks) * 512 : -1
        }
        #expect(allocated() >= MetricsSegment.fileBytes)
        // A copy of it made sparse (header written, the rest a hole) is ours of this layout:
        // reopened, it gets its blocks.
        let header = Array(try readFile(path).prefix(64))
        unlink(path)
        try writeFile(path, header)
        #expect(truncate(path, off_t(MetricsSegment.fileBytes)) == 0)
        #expect(allocated() < MetricsSegment.fileBytes)
        let reopened = try MetricsSegment.open(path: path)
        #expect(reopened.replaced == nil)
        #expect(allocated() >= MetricsSegment.fileBytes)
    }

    /// Anything but one of our segments of this layout is replaced by a zeroed file, and never
    /// read: another size, another magic, another version, a symlink (whose target is left as
    /// it was), a FIFO, a hard-linked file.
    @Test func foreignOrCorruptFilesAreReplacedNotTrusted() throws {
        let good = try MetricsSegment.open(path: path)
        good.add(MetricsLayout.poolRestarts, 3)
        var bytes = try readFile(path)

        var wrongVersion = bytes
        wrongVersion[8] = UInt8(MetricsSegment.version - 1)
        try writeFile(path, wrongVersion)
        #expect(MetricsSegment.read(path: path) == nil)
        var segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced == "version \(MetricsSegment.version - 1), not \(MetricsSegment.version)")
        #expect(segment.load(MetricsLayout.poolRestarts) == 0)

        bytes[0] = UInt8(ascii: "X")
        try writeFile(path, bytes)
        #expect(MetricsSegment.read(path: path) == nil)
        segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced == "not a metrics segment (magic)")

        try writeFile(path, Array(bytes[..<100]))
        #expect(MetricsSegment.read(path: path) == nil)
        segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced == "100 bytes, not \(MetricsSegment.fileBytes)")
        #expect(MetricsSegment.read(path: path) != nil)

        // A symlink to a file the attacker wants written: replaced, the target untouched.
        let target = directory + "/target"
        try writeFile(target, bytes)
        unlink(path)
        #expect(symlink(target, path) == 0)
        #expect(MetricsSegment.read(path: path) == nil)
        segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced != nil)
        segment.add(MetricsLayout.poolRestarts)
        #expect(try readFile(target) == bytes)
        var info = stat()
        let called = lstat(path, &info)
        #expect(called == 0)
        #expect(info.st_mode & S_IFMT == S_IFREG)

        // A hard link to a segment-shaped file elsewhere: replaced, the other name untouched.
        try writeFile(target, try readFile(path))
        unlink(path)
        #expect(link(target, path) == 0)
        #expect(MetricsSegment.read(path: path) == nil)
        segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced == "2 hard links")
        segment.add(MetricsLayout.poolRestarts, 9)
        #expect(MetricsSegment.read(path: path)?[MetricsLayout.poolRestarts] == 9)
        #expect(MetricsSegment.read(path: target)?[MetricsLayout.poolRestarts] == 1, "the other name untouched")

        // A FIFO: neither the reader nor the opener blocks on it.
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(MetricsSegment.read(path: path) == nil)
        segment = try MetricsSegment.open(path: path)
        #expect(segment.replaced == "not a regular file")
        #expect(MetricsSegment.read(path: path) != nil)
    }

    @Test func directoryIsMadePrivateAndASymlinkIsRefused() throws {
        let made = try MetricsSegment.directory(run: directory)
        #expect(made == directory + "/metrics")
        var info = stat()
        let called = lstat(made, &info)
        #expect(called == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(try MetricsSegment.directory(run: directory) == made, "an existing one is used")
        let other = directory + "/other"
        #expect(mkdir(other, 0o700) == 0)
        #expect(symlink(directory, other + "/metrics") == 0)
        #expect(throws: (any Error).self) { try MetricsSegment.directory(run: other) }
    }

    func readFile(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw MetricsError("open \(path)") }
        defer { close(fd) }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { break }
            out += chunk[..<n]
        }
        return out
    }

    func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw MetricsError("create \(path)") }
        defer { close(fd) }
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }
}
