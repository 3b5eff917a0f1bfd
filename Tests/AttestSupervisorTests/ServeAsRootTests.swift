@testable import AttestSupervisor
import CLISupport
import Foundation
import SupervisorTestSupport
import Testing

/// `attestctl serve` as root on a data directory the service user owns (issue 37's review of
/// its own fixes, F3, F4): it never lets config.json pick the account through a linked path,
/// and never hands over a file with a second name. (F1, initialising that directory as its
/// owner, is checked by nginx/e2e/serve.sh "re-initialised as root": it switches the whole
/// process's effective ids, which would disturb the tests running beside it here.)
@Suite("ServeAsRoot") struct ServeAsRootTests {
    static let victimText = "root's file, must stay as it is\n"

    static func victim(in dir: TemporaryDirectory) -> String { dir.write("victim", victimText, mode: 0o600) }

    static func untouched(_ victim: String) -> Bool {
        var st = stat()
        return stat(victim,
                    &st) == 0 && st.st_uid == 0 && (try? String(contentsOfFile: victim, encoding: .utf8)) == victimText
    }

    /// DATA owned by `nobody` (the service user's part here).
    static func data(in dir: TemporaryDirectory, _ nobody: ServiceUser) -> String {
        let data = dir.path + "/data"
        mkdir(data, 0o750)
        chown(data, nobody.uid, nobody.gid)
        return data
    }

    @Test("server.user from config.json cannot name another account through a linked data path",
          .enabled(if: geteuid() == 0))
    func linkedDataPath() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let dir = TemporaryDirectory()
        let data = Self.data(in: dir, nobody)
        symlink(data, dir.path + "/link")  // root's link to the user's directory, as /var/lib/x -> /srv/x
        let args = try Arguments(["--data", dir.path + "/link"], valued: ["data"], switches: [])
        #expect(throws: SupervisorError.self) {
            _ = try Serve(args).serviceUser(named: "root", chosenByRoot: false, trustRoots: [])
        }
    }

    @Test("taking ownership skips a file with a second name (a hard link to root's file)", .enabled(if: geteuid() == 0))
    func hardLink() throws {
        let nobody = try #require(ServiceUser.lookUp("nobody"))
        let dir = TemporaryDirectory()
        let victim = Self.victim(in: dir)
        let data = dir.path + "/data"
        mkdir(data, 0o755)
        mkdir(data + "/keys", 0o700)
        link(victim, data + "/keys/planted.pem")
        _ = dir.write("data/keys/real.pem", "key", mode: 0o600)
        try nobody.takeOwnership(of: data)
        #expect(Self.untouched(victim), "root handed a second name of its file over")
        var st = stat()
        #expect(stat(data + "/keys/real.pem", &st) == 0 && st.st_uid == nobody.uid,
                "the data's own files are handed over")
    }
}
