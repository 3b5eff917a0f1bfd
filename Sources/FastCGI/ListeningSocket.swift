import Glibc

/// The pool's listening unix socket: bound by the master before it forks, inherited by every
/// worker, closed and unlinked by the master when it stops.
struct ListeningSocket {
    let fd: Int32
    let path: String
    /// Identity of the socket file we created, so that `remove()` never unlinks a socket a
    /// newer server has since bound at the same path.
    private let device: UInt64
    private let inode: UInt64

    /// Binds `options.socketPath` with mode `options.socketMode` and starts listening.
    ///
    /// A stale socket file (one nobody accepts on) is unlinked first; a live one, or any file
    /// that is not a socket, is left alone and reported.
    /// - Throws: `FastCGIError` with code `socket`.
    static func bind(_ options: ServerOptions) throws(FastCGIError) -> ListeningSocket {
        let path = options.socketPath
        try removeStale(path)
        // Non-blocking: workers wait with epoll and a worker that loses the race for a
        // connection gets EAGAIN instead of blocking where a stop signal cannot reach it.
        let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(AF_UNIX, flags, 0)
        guard fd >= 0 else { throw FastCGIError(.socket, "socket(): \(errnoDescription())") }
        // The umask makes bind create the file with exactly socketMode: no window with wider bits.
        let savedMask = umask(mode_t(~options.socketMode & 0o777))
        let bound = withAddress(path) { Glibc.bind(fd, $0, $1) }
        let bindErrno = errno
        umask(savedMask)
        guard bound == 0 else {
            Glibc.close(fd)
            throw FastCGIError(.socket, "bind \(path): \(errnoDescription(bindErrno))")
        }
        var info = stat()
        guard chmod(path, mode_t(options.socketMode)) == 0, stat(path, &info) == 0,
              listen(fd, options.backlog) == 0 else {
            let message = errnoDescription()
            Glibc.close(fd)
            unlink(path)
            throw FastCGIError(.socket, "listen on \(path): \(message)")
        }
        return ListeningSocket(fd: fd, path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The socket a previous image of this master bound (a reload re-executes the binary and
    /// hands the descriptor over): `fd` must be a listening socket bound at `path`.
    static func adopt(fd: Int32, path: String) throws(FastCGIError) -> ListeningSocket {
        var info = stat()
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == Int32(SOCK_STREAM.rawValue),
              stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
            throw FastCGIError(.socket, "descriptor \(fd) handed over for \(path) is not its listening socket")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return ListeningSocket(fd: fd, path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Lets the descriptor survive `execve` (for a reload's handover).
    func keepAcrossExec() { _ = fcntl(fd, F_SETFD, 0) }

    /// Closes the master's descriptor and unlinks the socket file if it is still ours: new
    /// connections then fail at once (nginx answers 502) instead of queueing for workers
    /// that are about to exit.
    func close() {
        _ = Glibc.close(fd)
        var info = stat()
        if lstat(path, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode {
            unlink(path)
        }
    }

    private static func removeStale(_ path: String) throws(FastCGIError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw FastCGIError(.socket, "\(path) exists and is not a socket; refusing to replace it")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw FastCGIError(.socket, "socket(): \(errnoDescription())") }
        let connected = withAddress(path) { connect(probe, $0, $1) }
        let connectErrno = errno
        Glibc.close(probe)
        if connected == 0 {
            throw FastCGIError(.socket, "\(path) is in use: another server accepts connections on it")
        }
        guard connectErrno == ECONNREFUSED || connectErrno == ENOENT else {
            throw FastCGIError(.socket, "cannot probe \(path): \(errnoDescription(connectErrno))")
        }
        if unlink(path) != 0, errno != ENOENT {
            throw FastCGIError(.socket, "cannot remove stale socket \(path): \(errnoDescription())")
        }
    }

    /// Calls `body` with a `sockaddr_un` for `path` (which `ServerOptions.validate` has
    /// already bounded to fit `sun_path`).
    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(ServerOptions.maxSocketPathBytes))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}
