#if canImport(Glibc)
import Glibc
#endif

/// Runs `program arguments…` to completion with standard output and error captured together
/// (at most 64 KiB kept); the exit status (-1 when it could not start) and the text.
func runCapturing(_ program: String, _ arguments: [String]) -> (status: Int32, output: String) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return (-1, "pipe: \(String(cString: strerror(errno)))") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
    posix_spawn_file_actions_addclose(&actions, fds[0])
    var argv = ([program] + arguments).map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, program, &actions, nil, &argv, environ)
    close(fds[1])
    defer { close(fds[0]) }
    guard rc == 0 else { return (-1, "cannot run \(program): \(String(cString: strerror(rc)))") }
    var output = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fds[0], &buffer, buffer.count)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { break }
        if output.count < 65_536 { output += buffer[..<n] }
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let exited = status & 0x7f == 0
    return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), String(decoding: output, as: UTF8.self))
}
