import AttestConfig
import AttestOperations
@testable import AttestSupervisor
@testable import attestctl
import Foundation
import SupervisorTestSupport
import Testing

/// Issue #37 items 2 and 4, attestctl's part: what `reload` and `restore` do as root with the
/// PIDs the service user planted in the data directory (the checks live in `PoolMaster`). Each
/// test plants the hostile entry, then checks that no signal was sent or nothing was read whole.
@Suite("HostileCommands") struct HostileCommandTests {

    /// Issue #37 F7: a sparse 256 MiB pid file made root's reload read it whole (630 MB, 231 s).
    @Test("reload refuses a 1 GiB sparse pid file at once, from its size", .enabled(if: geteuid() == 0))
    func hugePidFile() throws {
        let (dir, data) = try ServiceUserAttacker.dataOwnedByNobody()
        defer { withExtendedLifetime(dir) {} }
        try ServiceUserAttacker.run(in: data + "/run", "truncate -s 1G refresh.sock.pid")
        let started = monotonicSeconds()
        var refusal = "accepted"
        do { _ = try reloadCommand.run(["refresh", "--data", data, "--timeout", "1"]) } catch { refusal = "\(error)" }
        let seconds = monotonicSeconds() - started
        #expect(refusal.contains("not a process id: nothing signalled"), "\(refusal.prefix(200))")
        #expect(seconds < 0.5, "took \(seconds) s")
    }

    /// Found while fixing F7: restore (as root) read every DATA/run/*.sock.pid whole, through links.
    @Test("restore's running-pool check reads no pid file through a link, a FIFO or past 32 bytes",
          .enabled(if: geteuid() == 0))
    func restorePidFiles() throws {
        let (dir, data) = try ServiceUserAttacker.dataOwnedByNobody()
        defer { withExtendedLifetime(dir) {} }
        try ServiceUserAttacker.run(in: data + "/run",
                                    "ln -s /dev/zero a.sock.pid && mkfifo b.sock.pid && truncate -s 1G c.sock.pid")
        let started = monotonicSeconds()
        var refusal = "accepted"
        do { _ = try restoreCommand.run(["--from", dir.path + "/absent.aebk", "--data",
                                         data]) } catch { refusal = "\(error)" }
        let seconds = monotonicSeconds() - started
        #expect(!refusal.contains("is served right now"), "\(refusal)")
        #expect(seconds < 0.5, "took \(seconds) s")
        // A real pool's pid file (this process stands in for the pool) still stops it.
        try ServiceUserAttacker.run(in: data + "/run", "echo \(getpid()) > d.sock.pid")
        do { _ = try restoreCommand.run(["--from", dir.path + "/absent.aebk", "--data",
                                         data]) } catch { refusal = "\(error)" }
        #expect(refusal.contains("is served right now (d.sock.pid)"), "\(refusal)")
    }

    @Test("pid files: only positive decimal numbers are PIDs")
    func pidParsing() {
        #expect(PoolMaster.parse("1234\n") == 1234)
        for bad in ["-1", "0", "", "abc", "12abc", "+5", "1 2", "99999999999", "-0"] {
            #expect(PoolMaster.parse(bad) == nil, "\(bad.debugDescription)")
        }
    }

    @Test("a PID that is not the pool's master is refused: another program, or our pool on another socket")
    func pidIdentity() throws {
        let dir = TemporaryDirectory()
        let sleeper = try ChildProcess(name: "sleep", executable: "/bin/sleep", arguments: ["30"],
                                       logDirectory: try PinnedDirectory.open(dir.path), logName: "sleep.out")
        defer { sleeper.signal(SIGKILL); _ = sleeper.wait(seconds: 5) }
        let problem = PoolMaster.problem(pid: sleeper.pid, endpoint: "refresh", socket: "/srv/data/run/refresh.sock")
        #expect(problem?.contains("not attest-refresh") == true, "\(problem ?? "accepted")")
        #expect(PoolMaster.problem(pid: 999_999_999, endpoint: "refresh", socket: "/x.sock") != nil)
        // A shell named like the pool, but not serving this socket.
        let fake = dir.path + "/attest-refresh"
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: "/bin/sh").resolvingSymlinksInPath().path,
                                         toPath: fake)
        let impostor = try ChildProcess(name: "fake", executable: fake,
                                        arguments: ["-c", "sleep 30; true", "--socket", "/other/refresh.sock"],
                                        logDirectory: try PinnedDirectory.open(dir.path), logName: "fake.out")
        defer { impostor.signal(SIGKILL); _ = impostor.wait(seconds: 5) }
        _ = waitUntil { (try? String(contentsOfFile: "/proc/\(impostor.pid)/cmdline",
                                     encoding: .utf8))?.contains("--socket") == true }
        let other = PoolMaster.problem(pid: impostor.pid, endpoint: "refresh", socket: "/srv/data/run/refresh.sock")
        #expect(other?.contains("does not serve") == true, "\(other ?? "accepted")")
        #expect(PoolMaster.problem(pid: impostor.pid, endpoint: "refresh", socket: "/other/refresh.sock") == nil,
                "the same process is accepted for the socket it serves")
    }
}

/// Stray words after a command are refused with a usage error (exit 2), not ignored.
@Suite("CommandUsage") struct CommandUsageTests {
    @Test("config reference refuses a stray word instead of printing the reference")
    func configReferenceStrayWord() throws {
        var refusal = "accepted"
        do { _ = try configCommand.run(["reference", "extra"]) } catch { refusal = "\(error)" }
        #expect(refusal.contains("unexpected argument extra"), "\(refusal)")
    }
}
