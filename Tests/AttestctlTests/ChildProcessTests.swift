@testable import attestctl
import AttestService
import Foundation
import Testing

/// Issue #7 items 14 and 11: what `attestctl serve` does with the processes it starts.
@Suite("ChildProcess") struct ChildProcessTests {
    /// Item 14: a child killed with -9 leaves what it forked behind (nginx's workers keep the
    /// port); `killGroup` reaches them.
    @Test("the process group of a child killed with SIGKILL is killed with it")
    func groupOfDeadLeaderKilled() throws {
        let dir = TemporaryDirectory()
        let child = try ChildProcess(name: "sh", executable: "/bin/sh", arguments: ["-c", "sleep 60 & sleep 60 & wait"],
                                     logDirectory: try PinnedDirectory.open(dir.path), logName: "sh.out", ownsProcessGroup: true)
        #expect(waitUntil { Self.members(ofGroup: child.pid).count >= 3 }, "sh and its two sleeps are in the child's group")
        child.signal(SIGKILL)
        #expect(child.wait(seconds: 5))
        #expect(child.groupIsAlive, "the orphaned sleeps survive their leader")
        child.killGroup()
        #expect(waitUntil { !child.groupIsAlive || Self.members(ofGroup: child.pid).isEmpty }, "nothing is left of the group")
    }

    @Test("a child that does not own its group leaves serve's group alone")
    func noGroupNoKill() throws {
        let dir = TemporaryDirectory()
        let child = try ChildProcess(name: "true", executable: "/bin/true", arguments: [], logDirectory: try PinnedDirectory.open(dir.path), logName: "t.out")
        #expect(child.wait(seconds: 5))
        #expect(!child.groupIsAlive)
        child.killGroup()  // must not signal anyone: getpgrp() is the test runner's group
    }

    /// Item 11: as root, the pools run as server.user.
    @Test("credentials: the child runs as the given user, its output in the log", .enabled(if: geteuid() == 0))
    func runsAsUser() throws {
        let dir = TemporaryDirectory()
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let child = try ChildProcess(name: "id", executable: "/usr/bin/id", arguments: ["-u"], logDirectory: try PinnedDirectory.open(dir.path), logName: "id.out",
                                     credentials: nobody.credentials)
        #expect(child.wait(seconds: 5))
        let output = try String(contentsOfFile: dir.path + "/id.out", encoding: .utf8)
        #expect(output == "\(nobody.uid)\n", "id -u printed \(output)")
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

func waitUntil(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
