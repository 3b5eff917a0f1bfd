@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// Issue #7 item 11: the unprivileged account serve runs nginx's workers and the pools as.
@Suite("ServiceUser") struct ServiceUserTests {
    @Test("a directory on the way that the user may not search is named")
    func unreachable() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let dir = TemporaryDirectory()
        let inner = dir.path + "/closed/data"
        mkdir(dir.path + "/closed", 0o700)
        mkdir(inner, 0o755)
        #expect(nobody.firstUnreachable(dir.path) == nil, "/tmp/… 0755 is reachable")
        if geteuid() != nobody.uid {
            #expect(nobody.firstUnreachable(inner) == dir.path + "/closed", "the 0700 directory blocks it")
        }
        #expect(nobody.firstUnreachable(dir.path + "/missing") == dir.path + "/missing")
    }

    @Test("taking ownership hands over the whole tree and keeps every mode", .enabled(if: geteuid() == 0))
    func takeOwnership() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let dir = TemporaryDirectory()
        mkdir(dir.path + "/keys", 0o700)
        let key = dir.write("keys/k1.pem", "secret", mode: 0o600)
        let jwks = dir.write("jwks.json", "{}", mode: 0o644)
        try nobody.takeOwnership(of: dir.path)
        for (path, mode) in [(dir.path, 0o755), (dir.path + "/keys", 0o700), (key, 0o600), (jwks, 0o644)] {
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_uid == nobody.uid && st.st_gid == nobody.gid, "\(path) belongs to nobody")
            #expect(Int(st.st_mode & 0o777) == mode, "\(path) keeps mode \(String(mode, radix: 8))")
        }
    }

    @Test("nginx's user line is the user and its primary group")
    func nginxUser() throws {
        let root = try #require(ServiceUser.lookUp("root"))
        #expect(root.nginxUser == "root root")
        #expect(root.groups.contains(root.gid))
        #expect(ServiceUser.lookUp("no-such-user-attestedge-test") == nil)
    }

    /// Issue 37: the tree is the service user's while root walks it. A directory swapped for a
    /// link to root's directory between the walk's look and its chown must not hand root's
    /// files over (the path-based walk did: lstat saw a directory, then lchown of DIR/NAME
    /// resolved through the link). A link planted in the tree is handed over itself.
    @Test("taking ownership follows no link, even one swapped in during the walk", .enabled(if: geteuid() == 0))
    func takeOwnershipFollowsNoLink() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let dir = TemporaryDirectory(), outside = TemporaryDirectory()
        let victim = outside.write("f", "root's own")
        mkdir(outside.path + "/d", 0o755)
        symlink(victim, dir.path + "/planted")
        mkdir(dir.path + "/data", 0o755)
        let data = dir.path + "/data"
        try nobody.takeOwnership(of: data)
        try nobody.takeOwnership(of: dir.path)
        var st = stat()
        #expect(lstat(victim, &st) == 0 && st.st_uid == 0, "a planted link's target stays root's")
        #expect(lstat(dir.path + "/planted", &st) == 0 && st.st_uid == nobody.uid, "the link itself is handed over")
        // The race: a thread keeps swapping DATA/sub between a directory (with a file "f" in
        // it) and a link to `outside`, while the walk runs again and again.
        let outsidePath = outside.path
        let sub = data + "/sub", real = dir.path + "/real", link = dir.path + "/link"
        mkdir(real, 0o755)
        close(open(real + "/f", O_CREAT | O_WRONLY | O_CLOEXEC, 0o644))
        symlink(outsidePath, link)
        let stop = ManagedAtomicFlag()
        let swapper = Thread {
            while !stop.isSet {
                rename(real, sub)
                rename(sub, real)
                rename(link, sub)
                rename(sub, link)
            }
        }
        swapper.start()
        for _ in 0..<20_000 { try? nobody.takeOwnership(of: data) }
        stop.set()
        Thread.sleep(forTimeInterval: 0.1)
        #expect(lstat(victim, &st) == 0 && st.st_uid == 0, "root's file was handed over through a swapped-in link")
        #expect(lstat(outside.path + "/d", &st) == 0 && st.st_uid == 0,
                "root's directory was handed over through a swapped-in link")
    }
}

/// A flag one thread sets and another polls.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
