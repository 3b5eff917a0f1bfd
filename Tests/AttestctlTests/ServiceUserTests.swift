@testable import attestctl
import Foundation
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
}
