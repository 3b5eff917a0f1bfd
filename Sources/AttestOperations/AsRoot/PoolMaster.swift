import AttestConfig
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// The PID in a pool's pid file (`DATA/run/ENDPOINT.sock.pid`), checked before a root process
/// signals it. The file is the service user's to write, so it may name any process: root's
/// sshd, `-1` (every process), `0` (attestctl's own group). A PID is accepted only when it is
/// positive and the process is that pool: `/proc/PID/exe` is a binary named
/// `attest-ENDPOINT` (` (deleted)` allowed: a binary replaced on disk before a reload), and its
/// command line passes `--socket SOCKET`, the socket the pid file sits beside.
package enum PoolMaster {
    /// The pid file's text as a PID: decimal digits only (surrounding whitespace allowed).
    package static func parse(_ text: String) -> pid_t? {
        let digits = text.trimmingWhitespace
        guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy({ ("0"..."9").contains($0) }),
              let pid = pid_t(digits), pid > 0 else {
            return nil
        }
        return pid
    }

    /// Why `pid` is not the master of `endpoint`'s pool on `socket`; `nil` when it is.
    package static func problem(pid: pid_t, endpoint: String, socket: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "process \(pid) does not exist (or its executable cannot be read)" }
        var exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if exe.hasSuffix(" (deleted)") { exe = String(exe.dropLast(" (deleted)".count)) }
        let expected = "attest-\(endpoint)"
        guard exe.split(separator: "/").last.map(String.init) == expected else {
            return "process \(pid) runs \(exe), not \(expected)"
        }
        let arguments = (try? FileIO.read("/proc/\(pid)/cmdline")).map {
            $0.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        } ?? []
        guard zip(arguments, arguments.dropFirst()).contains(where: { $0 == "--socket" && $1 == socket }) else {
            return "process \(pid) (\(exe)) does not serve \(socket)"
        }
        return nil
    }
}
