import AttestConfig
import AttestSupervisor
import Foundation

/// The service user's side in the root-boundary tests: `nobody` stands in for the service user,
/// owns a data directory's run/ and log/, and runs the attacker's shell steps.
public enum ServiceUserAttacker {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `nobody`, or a failure when this machine has no such user.
    package static func nobody() throws -> ServiceUser {
        guard let user = ServiceUser.lookUp("nobody") else { throw Failure(description: "no user nobody") }
        return user
    }

    /// A data directory (`DIR/data`) whose run/ and log/ belong to `nobody`.
    public static func dataOwnedByNobody() throws -> (TemporaryDirectory, String) {
        let nobody = try nobody()
        let dir = TemporaryDirectory()
        let data = dir.path + "/data"
        for sub in ["", "/run", "/log"] {
            mkdir(data + sub, 0o755)
            chown(data + sub, nobody.uid, nobody.gid)
        }
        return (dir, data)
    }

    /// Runs `script` with `/bin/sh` in `directory` as `nobody`: the attacker's step. Throws
    /// when it does not exit 0 within 10 s, with its exit and output.
    public static func run(in directory: String, _ script: String) throws {
        let nobody = try nobody()
        let log = TemporaryDirectory()
        let child = try ChildProcess(name: "attacker", executable: "/bin/sh",
                                     arguments: ["-c", "cd \(directory) && \(script)"],
                                     logDirectory: try PinnedDirectory.open(log.path), logName: "out",
                                     credentials: nobody.credentials)
        guard child.wait(seconds: 10) && child.exitStatus == 0 else {
            throw Failure(description: "\(script): \(child.exitDescription), \(child.logTail())")
        }
    }
}
