#if canImport(Glibc)
import Glibc
#endif

/// Files the store creates beside LMDB's own (`sync.state`, `ephemeral.boot`).
enum FileOwner {
    /// A file root created in a data directory that another user owns goes to that user, so
    /// the service user can still open it after `attestctl` ran as root.
    static func match(_ fd: Int32, of path: String) {
        var st = stat()
        guard geteuid() == 0, stat(path, &st) == 0, st.st_uid != 0 else { return }
        _ = fchown(fd, st.st_uid, st.st_gid)
    }

    /// `match` for files by path (symbolic links not followed).
    static func match(paths: [String], of path: String) {
        var st = stat()
        guard geteuid() == 0, stat(path, &st) == 0, st.st_uid != 0 else { return }
        for file in paths { _ = lchown(file, st.st_uid, st.st_gid) }
    }
}
