import AttestConfig
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// Issue #7 item 11: a data directory under a directory the service user cannot search (a
/// checkout under /root, a 0700 temporary directory) is made reachable for that user alone.
@Suite("SearchGrant") struct SearchGrantTests {
    @Test("the encoding round-trips and a mode becomes owner, group and other entries")
    func encoding() throws {
        let entries = SearchGrant.fromMode(0o750)
        #expect(entries.map(\.perm) == [7, 5, 0])
        let bytes = SearchGrant.encode(entries + [SearchGrant.Entry(tag: 0x02, perm: 1, id: 0x0102_0304)])
        #expect(bytes.prefix(4) == [2, 0, 0, 0] && bytes.count == 4 + 4 * 8)
        #expect(Array(bytes.suffix(4)) == [4, 3, 2, 1], "ids are little-endian")
    }

    @Test("a 0700 directory lets the user through after the grant, and nobody else", .enabled(if: geteuid() == 0))
    func grantLetsOnlyTheUserThrough() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let dir = TemporaryDirectory()
        let closed = dir.path + "/closed"
        mkdir(closed, 0o700)
        mkdir(closed + "/data", 0o755)
        #expect(nobody.firstUnreachable(closed + "/data") == closed)
        #expect(try run("/bin/ls", closed + "/data", as: nobody) != 0, "blocked before the grant")

        #expect(try nobody.makeReachable(closed + "/data") == [closed])
        #expect(nobody.firstUnreachable(closed + "/data") == nil)
        #expect(try run("/bin/ls", closed + "/data", as: nobody) == 0, "reachable after the grant")
        var st = stat()
        _ = stat(closed, &st)
        #expect(st.st_mode & 0o707 == 0o700, "owner and other bits unchanged")
        #expect(try nobody.makeReachable(closed + "/data").isEmpty, "a second start grants nothing more")
    }

    private func run(_ program: String, _ argument: String, as user: ServiceUser) throws -> Int32 {
        let log = TemporaryDirectory()
        let child = try ChildProcess(name: "probe", executable: program, arguments: [argument],
                                     logDirectory: try PinnedDirectory.open(log.path), logName: "out",
                                     credentials: user.credentials)
        #expect(child.wait(seconds: 5))
        return child.exitStatus.map { $0 & 0x7F == 0 ? ($0 >> 8) & 0xFF : 128 } ?? -1
    }
}
