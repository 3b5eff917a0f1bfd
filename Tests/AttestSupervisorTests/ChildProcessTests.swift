import AttestConfig
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// Issue #7 items 14 and 11: what `attestctl serve` does with the processes it starts.
@Suite("ChildProcess") struct ChildProcessTests {
    /// Item 14: a child killed with -9 leaves what it forked behind (nginx's workers keep the
    /// port); `killGroup` reaches them.
    @Test("the process group of a child killed with SIGKILL is killed with it")
    func groupOfDeadLeaderKilled() throws {
        let dir = TemporaryDirectory()
        let child = try ChildProcess(name: "sh", executable: "/bin/sh", arguments: ["-c", "sleep 60 & sleep 60 & wait"],
                                     logDirectory: try PinnedDirectory.open(dir.path), logName: "sh.out",
                                     ownsProcessGroup: true)
        #expect(waitUntil { Self.members(ofGroup: child.pid).count >= 3 },
                "sh and its two sleeps are in the child's group")
        child.signal(SIGKILL)
        #expect(child.wait(seconds: 5))
        #expect(child.groupIsAlive, "the orphaned sleeps survive their leader")
        child.killGroup()
        #expect(waitUntil { !child.groupIsAlive || Self.members(ofGroup: child.pid).isEmpty },
                "nothing is left of the group")
    }

    @Test("a child that does not own its group leaves serve's group alone")
    func noGroupNoKill() throws {
        let dir = TemporaryDirectory()
        let child = try ChildProcess(name: "true", executable: "/bin/true", arguments: [],
                                     logDirectory: try PinnedDirectory.open(dir.path), logName: "t.out")
        #expect(child.wait(seconds: 5))
        #expect(!child.groupIsAlive)
        child.killGroup()  // must not signal anyone: getpgrp() is the test runner's group
    }

    /// Item 11: as root, the pools run as server.user.
    @Test("credentials: the child runs as the given user, its output in the log", .enabled(if: geteuid() == 0))
    func runsAsUser() throws {
        let dir = TemporaryDirectory()
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let child = try ChildProcess(name: "id", executable: "/usr/bin/id", arguments: ["-u"],
                                     logDirectory: try PinnedDirectory.open(dir.path), logName: "id.out",
                                     credentials: nobody.credentials)
        #expect(child.wait(seconds: 5))
        let output = try String(contentsOfFile: dir.path + "/id.out", encoding: .utf8)
        #expect(output == "\(nobody.uid)\n", "id -u printed \(output)")
    }

    /// Issue #37 A7: root's environment (its secrets) is not handed to the service user.
    @Test("a child with credentials gets only the kept variables and its user's HOME")
    func serviceEnvironmentDropsRootsVariables() {
        let roots = ["PGPASSWORD=root-pg-password", "AWS_SECRET_ACCESS_KEY=root-cloud-secret",
                     "SSH_AUTH_SOCK=/tmp/ssh-root/agent.1",
                     "HOME=/root", "ATTEST_TEST_POSTGRES_URL=postgresql://u:pw@db/x", "PGPASSFILE=/root/.pgpass",
                     "LS_COLORS=x", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC",
                     "LD_PRELOAD=/usr/lib/faketime/libfaketime.so.1", "FAKETIME_SHARED=/x /y", "FAKETIME=+600s",
                     "MALLOC_ARENA_MAX=2", "TSAN_OPTIONS=halt_on_error=1", "NOEQUALS"]
        #expect(ServiceEnvironment.filtered(roots, home: "/var/lib/attestedge") == [
            "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "LD_PRELOAD=/usr/lib/faketime/libfaketime.so.1",
            "FAKETIME_SHARED=/x /y", "FAKETIME=+600s", "MALLOC_ARENA_MAX=2", "TSAN_OPTIONS=halt_on_error=1",
            "HOME=/var/lib/attestedge"])
        #expect(ServiceEnvironment.filtered([], home: "") == ["HOME=/"], "a user without a home gets /")
    }

    @Test("credentials: the child's /proc environment is the filtered one; without, serve's own",
          .enabled(if: geteuid() == 0))
    func childEnvironment() throws {
        let dir = TemporaryDirectory()
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let logs = try PinnedDirectory.open(dir.path)
        let filtered = try ChildProcess(name: "env", executable: "/usr/bin/env", arguments: [], logDirectory: logs,
                                        logName: "as-user.out", credentials: nobody.credentials)
        let own = try ChildProcess(name: "env", executable: "/usr/bin/env", arguments: [], logDirectory: logs,
                                   logName: "own.out")
        #expect(filtered.wait(seconds: 5) && own.wait(seconds: 5))
        // env(1) prints each entry and a newline (a value may hold newlines: an exported bash function).
        let printed = { (name: String) in try String(contentsOfFile: dir.path + "/" + name, encoding: .utf8) }
        let current = ServiceEnvironment.current()
        let filteredEnvironment = ServiceEnvironment.filtered(current, home: nobody.home)
        #expect(try printed("as-user.out") == filteredEnvironment.map { $0 + "\n" }.joined())
        #expect(filteredEnvironment.last == "HOME=\(nobody.home)" && filteredEnvironment.count < current.count)
        #expect(try printed("own.out") == current.map { $0 + "\n" }.joined(),
                "no credentials: the environment as today")
    }

    /// Live members of a process group (zombies excluded), from /proc.
    static func members(ofGroup pgid: pid_t) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.range(of: ") ", options: .backwards) else { return false }
            let fields = stat[close.upperBound...].split(separator: " ")
            return fields.count > 2 && fields[0] != "Z" && Int32(fields[2]) == pgid
        }
    }
}
