import AttestConfig
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// Issue #37 items 2 and 4: what `attestctl serve` and `reload` do as root with files and PIDs
/// the service user planted in the data directory. Each test plants the hostile entry, then
/// checks that root's file (the victim) is untouched or that no signal was sent.
@Suite("HostileServe") struct HostileServeTests {
    static let victimText = String(repeating: "root's file, must stay as it is\n", count: 100)

    /// A data-like directory and a victim file outside it.
    static func scene() -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        mkdir(dir.path + "/log", 0o755)
        let victim = dir.write("victim", victimText, mode: 0o600)
        return (dir, victim)
    }

    static func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test("rotation replaces a link planted as NAME.1 and says so once; the link's target is untouched")
    func linkAsPreviousGeneration() throws {
        let (dir, victim) = Self.scene()
        _ = dir.write("log/attest-validate.log", String(repeating: "attacker's line\n", count: 200))
        symlink(victim, dir.path + "/log/attest-validate.log.1")
        _ = dir.write("log/access.log", String(repeating: "a", count: 2000))
        symlink(victim, dir.path + "/log/access.log.1")
        var warnings = [String]()
        let rotation = LogRotation(directory: try PinnedDirectory.open(dir.path + "/log"), maxBytes: 1000)
        let reopen = rotation.rotate(warn: { warnings.append($0) })
        #expect(reopen, "nginx's log was still rotated")
        #expect(Self.text(victim) == Self.victimText, "the victim was not overwritten")
        #expect(dir.size("log/attest-validate.log.1") == 1000 && dir.size("log/attest-validate.log") == 0,
                "rotation still works")
        #expect(dir.size("log/access.log.1") == 2000)
        #expect(warnings.count == 2 && warnings.allSatisfy { $0.contains("replaced, not followed") }, "\(warnings)")
        _ = rotation.rotate(warn: { warnings.append($0) })
        #expect(warnings.count == 2, "said once, not twice a second")
    }

    @Test("a log that is itself a link to a big file is neither copied nor truncated")
    func linkAsLog() throws {
        let (dir, victim) = Self.scene()
        symlink(victim, dir.path + "/log/attest-refresh.log")
        var warnings = [String]()
        _ = LogRotation(directory: try PinnedDirectory.open(dir.path + "/log"),
                        maxBytes: 100).rotate(warn: { warnings.append($0) })
        #expect(Self.text(victim) == Self.victimText, "not truncated")
        #expect(dir.size("log/attest-refresh.log.1") == nil, "its content was not copied where the service user reads")
        #expect(warnings.count == 1 && warnings[0].contains("not a regular file"), "\(warnings)")
    }

    @Test("a pool's log planted as a link is refused at (re)start; the target gets nothing")
    func childLogIsALink() throws {
        let (dir, victim) = Self.scene()
        symlink(victim, dir.path + "/log/attest-mad.log")
        #expect(throws: SupervisorError.self) {
            try ChildProcess(name: "echo", executable: "/bin/echo", arguments: ["attacker"],
                             logDirectory: try PinnedDirectory.open(dir.path + "/log"), logName: "attest-mad.log")
        }
        #expect(Self.text(victim) == Self.victimText)
    }

    @Test("taking ownership chowns a planted link itself, never its target", .enabled(if: geteuid() == 0))
    func ownershipDoesNotFollowLinks() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let (dir, victim) = Self.scene()
        let data = dir.path + "/data"
        mkdir(data, 0o755)
        mkdir(data + "/keys", 0o700)
        symlink(victim, data + "/keys/evil.pem")
        symlink(dir.path, data + "/escape")
        try nobody.takeOwnership(of: data)
        var st = stat()
        #expect(stat(victim, &st) == 0 && st.st_uid == 0, "the victim still belongs to root")
        #expect(stat(dir.path, &st) == 0 && st.st_uid == 0, "a linked directory is not walked into")
        #expect(lstat(data + "/keys/evil.pem", &st) == 0 && st.st_uid == nobody.uid, "the link itself is handed over")
    }


    /// Issue #37 F7: serve prints a log's last lines when nginx or a pool dies; the logs are the
    /// service user's.
    @Test("the last lines of a 1 GiB sparse log are read from its end only", .enabled(if: geteuid() == 0))
    func hugeLogTails() throws {
        let (dir, data) = try ServiceUserAttacker.dataOwnedByNobody()
        defer { withExtendedLifetime(dir) {} }
        let script = "truncate -s 1G error.log attest-mad.log && echo 'nginx: the last line' >> error.log"
        try ServiceUserAttacker.run(in: data + "/log", script)
        let logs = try PinnedDirectory.open(data + "/log")
        var started = monotonicSeconds()
        let errorTail = ServeSupervisor.tail(logs, "error.log")
        var seconds = monotonicSeconds() - started
        #expect(errorTail.hasSuffix("nginx: the last line"), "\(errorTail.suffix(80).debugDescription)")
        #expect(seconds < 0.5, "ServeSupervisor.tail took \(seconds) s")
        let pool = try ChildProcess(name: "mad", executable: "/bin/echo", arguments: ["the pool's last line"],
                                    logDirectory: logs, logName: "attest-mad.log")
        #expect(pool.wait(seconds: 5))
        started = monotonicSeconds()
        let poolTail = pool.logTail()
        seconds = monotonicSeconds() - started
        #expect(poolTail.contains("the pool's last line"), "\(poolTail.suffix(80).debugDescription)")
        #expect(seconds < 0.5, "ChildProcess.logTail took \(seconds) s")
    }
}
