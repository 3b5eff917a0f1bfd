@testable import AttestConfig
import AttestCore
@testable import AttestOperations
import AttestService
import AttestStore
import Foundation
import Testing

/// Issue #37 item 2: root never follows a link under the data directory. Each test plants what
/// the service user could (a symbolic link to a file root owns, a FIFO, a linked directory)
/// where a root process reads, creates or replaces a file, then checks the target is untouched.
@Suite struct HostileDataDirectoryTests {
    /// A scratch directory with a "victim" file outside the data directory (what root must
    /// not touch) and a data directory beside it.
    final class Scene {
        let root: String
        let victim: String
        let victimText = "root's own file: must stay as it is\n"
        var data: DataDirectory { DataDirectory(root + "/data") }

        init() throws {
            var template = Array("/tmp/attest-hostile-XXXXXX".utf8CString)
            root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
            victim = root + "/victim"
            try FileIO.writeAtomically(victim, text: victimText, mode: 0o600)
            try FileIO.makeDirectories(root + "/data")
        }

        var victimIsUntouched: Bool { (try? FileIO.readText(victim)) == victimText }

        func link(_ relative: String, to target: String? = nil) {
            symlink(target ?? victim, root + "/data/" + relative)
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test func aPinnedDirectoryRefusesLinksAndFIFOsAndReplacesPlantedNames() throws {
        let scene = try Scene()
        let dir = try PinnedDirectory.open(scene.data.path)
        scene.link("linked.log")
        for flags in [O_RDONLY, O_WRONLY | O_APPEND, O_WRONLY | O_CREAT | O_TRUNC] {
            #expect(throws: ConfigError.self, "flags \(flags)") { try dir.openFile("linked.log", flags) }
        }
        #expect(throws: ConfigError.self) { try dir.read("linked.log", atMost: 4096) }
        #expect(throws: ConfigError.self) { try dir.tail("linked.log", bytes: 4096) }
        mkfifo(scene.data.path + "/fifo", 0o644)
        #expect(throws: ConfigError.self, "a FIFO is refused at once, not waited on") {
            try dir.openFile("fifo", O_RDONLY)
        }
        scene.link("keys", to: scene.root)
        #expect(throws: ConfigError.self) { try dir.directory("keys") }
        #expect(throws: ConfigError.self) { try dir.openFile("keys/victim", O_RDONLY) }
        let fd = try dir.create("linked.log", mode: 0o644)
        _ = write(fd, "new", 3)
        close(fd)
        #expect(scene.victimIsUntouched)
        #expect(try FileIO.readText(scene.data.path + "/linked.log") == "new",
                "the link itself was replaced by a fresh file")
        #expect(throws: ConfigError.self, "a path that climbs out is refused") {
            try dir.openFile("../victim", O_RDONLY)
        }
    }

    @Test func aFileWithASecondHardLinkIsNotOpenedForWriting() throws {
        let scene = try Scene()
        let dir = try PinnedDirectory.open(scene.data.path)
        link(scene.victim, scene.data.path + "/hard.log")
        #expect(throws: ConfigError.self) { try dir.openFile("hard.log", O_WRONLY | O_APPEND) }
        #expect(scene.victimIsUntouched)
    }

    /// Issue #37 F8: the link count was checked after `O_TRUNC` had emptied the file.
    @Test func aFileWithASecondHardLinkIsRefusedBeforeItIsTruncated() throws {
        let scene = try Scene()
        let dir = try PinnedDirectory.open(scene.data.path)
        link(scene.victim, scene.data.path + "/hard.log")
        #expect(throws: ConfigError.self) { try dir.openFile("hard.log", O_WRONLY | O_TRUNC) }
        #expect(throws: ConfigError.self) { try dir.openFile("hard.log", O_WRONLY | O_CREAT | O_TRUNC) }
        #expect(scene.victimIsUntouched, "refused with its content unchanged")
        try FileIO.writeAtomically(scene.data.path + "/plain.log", text: "old content\n")
        close(try dir.openFile("plain.log", O_WRONLY | O_TRUNC))
        #expect(try FileIO.read(scene.data.path + "/plain.log") == [], "a file with one link is still truncated")
    }

    /// Issue #37 F7: what root reads under DATA is bounded, whatever the file's size.
    @Test func readsAreBoundedBySizeAndTailsReadTheEnd() throws {
        let scene = try Scene()
        let dir = try PinnedDirectory.open(scene.data.path)
        let file = scene.data.path + "/x.pid"
        try FileIO.writeAtomically(file, text: String(repeating: "9", count: 32))
        #expect(try dir.read("x.pid", atMost: 32)?.count == 32)
        #expect(try dir.read("absent", atMost: 32) == nil)
        try FileIO.writeAtomically(file, text: String(repeating: "9", count: 32) + "8")
        var code: Int32 = 0
        do { _ = try dir.read("x.pid", atMost: 32) } catch let failure as ConfigError { code = failure.errorNumber }
        #expect(code == EFBIG, "one byte over the limit is refused")
        #expect(try dir.tail("x.pid", bytes: 2) == Array("98".utf8))
        #expect(try dir.tail("x.pid", bytes: 100)?.count == 33, "a file shorter than the tail is read whole")
        #expect(try dir.tail("absent", bytes: 2) == nil)
    }

    @Test func writingAtomicallyDoesNotWriteThroughALinkAtItsTemporaryName() throws {
        let scene = try Scene()
        let target = scene.data.path + "/site.conf"
        symlink(scene.victim, target + ".tmp.\(getpid())")
        try FileIO.writeAtomically(target, text: "rendered\n")
        #expect(scene.victimIsUntouched)
        #expect(try FileIO.readText(target) == "rendered\n")
    }

    @Test(.enabled(if: !Fixture.onPostgres, "LMDB only")) func backupLeavesOutLinksUnderKeysTestCAAndSecrets() throws {
        let scene = try Scene()
        let now = Timestamp(iso8601: "2026-06-01T12:00:00Z")!
        try scene.data.initialise(configuration: Configuration(), now: now)
        scene.link("keys/stolen.pem")
        try FileIO.makeDirectories(scene.data.testCADirectory)
        scene.link("test-ca/ca.key")
        unlink(scene.data.challengeKeyFile)
        scene.link("secrets/challenge.key")
        mkfifo(scene.data.keysDirectory + "/fifo.pem", 0o644)
        let file = scene.root + "/backup.aebk"
        let store = try Store(directory: scene.data.storeDirectory,
                              options: try scene.data.loadConfiguration().storeOptions)
        let summary = try Backup.take(data: scene.data, store: store, to: file, now: now)
        let bytes = try #require(try FileIO.read(file))
        #expect(bytes.firstRange(of: Array(scene.victimText.utf8)) == nil, "the victim's content is not in the backup")
        for name in ["keys/stolen.pem", "test-ca/ca.key", "secrets/challenge.key", "keys/fifo.pem"] {
            #expect(summary.skipped.contains { $0.hasPrefix(name + ":") },
                    "\(name) reported as left out: \(summary.skipped)")
        }
        #expect(summary.skipped.contains { $0.contains("symbolic link") })
    }

    @Test(.enabled(if: !Fixture.onPostgres, "LMDB only"))
    func restoreReplacesLinksAndRefusesLinkedDirectories() throws {
        let scene = try Scene()
        let now = Timestamp(iso8601: "2026-06-01T12:00:00Z")!
        let source = DataDirectory(scene.root + "/source")
        try source.initialise(configuration: Configuration(), now: now)
        let file = scene.root + "/backup.aebk"
        do {
            let store = try Store(directory: source.storeDirectory,
                                  options: try source.loadConfiguration().storeOptions)
            _ = try Backup.take(data: source, store: store, to: file, now: now)
        }
        // Planted where restore creates, replaces and removes files.
        try scene.data.makeLayout()
        try FileIO.makeDirectories(scene.data.storeDirectory + "/durable")
        scene.link("store/durable/lock.mdb")
        scene.link("store/durable/data.mdb.restore-tmp")
        scene.link("config.json.restore-tmp")
        scene.link("jwks.json")
        _ = try Backup.restore(from: file, into: scene.data)
        #expect(scene.victimIsUntouched)
        #expect(FileIO.exists(scene.victim), "removing lock.mdb removed the link, not its target")
        #expect(try FileIO.read(scene.data.jwksFile) == (try FileIO.read(source.jwksFile)),
                "the link at jwks.json was replaced by the file")
        // A directory swapped for a link: refused, nothing written through it.
        let outside = scene.root + "/outside"
        try FileIO.makeDirectories(outside)
        try FileManager.default.removeItem(atPath: scene.data.keysDirectory)
        scene.link("keys", to: outside)
        #expect(throws: ConfigError.self) { try Backup.restore(from: file, into: scene.data) }
        #expect(FileIO.list(outside).isEmpty, "nothing was written through the linked keys directory")
    }

    @Test func configJSONIsReadWithABoundAndNotThroughALink() throws {
        let scene = try Scene()
        scene.link("config.json", to: "/dev/zero")  // unbounded: root's serve would read for ever
        let started = Date()
        #expect(throws: (any Error).self) { _ = try scene.data.loadConfiguration() }
        #expect(Date().timeIntervalSince(started) < 2, "refused at once, not read until memory ran out")
        unlink(scene.root + "/data/config.json")
        let big = [UInt8](repeating: 0x20, count: DataDirectory.maxConfigurationBytes + 1)
        try FileIO.writeAtomically(scene.root + "/data/config.json", big)
        #expect(throws: (any Error).self) { _ = try scene.data.loadConfiguration() }
        try FileIO.writeAtomically(scene.root + "/data/config.json", text: "{}")
        #expect(try scene.data.loadConfiguration().listen == Configuration().listen, "a real one still loads")
    }

    /// Review of issue 41: nginx makes a unix listen socket 0666, so the flag stream's
    /// publisher socket (`DATA/run/flags-publish.sock` under `attestctl serve`) is kept from
    /// other local accounts by DATA/run alone. A 0755 DATA/run let any account POST forged
    /// `{"flags":…}` to every stream and read nchan's /status (nginx/e2e/flags.py plays that
    /// account, as `nobody`, through a real nginx).
    @Test func theRunDirectoryKeepsOtherAccountsAwayFromThePublisherSocket() throws {
        let scene = try Scene()
        try scene.data.initialise(now: Timestamp(seconds: 1_800_000_000))
        var info = stat()
        #expect(stat(scene.data.runDirectory, &info) == 0)
        let mode = String(info.st_mode & 0o777, radix: 8)
        #expect(info.st_mode & 0o007 == 0,
                "DATA/run is \(mode): others may enter it and use nginx's 0666 flags-publish.sock")
        #expect(info.st_mode & 0o777 == DataDirectory.runDirectoryMode, "DATA/run is \(mode)")
    }
}
