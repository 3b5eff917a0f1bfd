#if canImport(Glibc)
import Glibc
#endif

/// Files the store creates beside LMDB's own (`sync.state`, `ephemeral.boot`, a recreated
/// ephemeral environment): when root (attestctl) creates them in a data directory another
/// user owns, they go to that user, so the service user can still open them.
enum FileOwner {
    static func match(_ fd: Int32, of path: String) {
        guard let (uid, gid) = owner(of: path) else { return }
        _ = fchown(fd, uid, gid)
    }

    /// `match` for files by path (symbolic links not followed).
    static func match(paths: [String], of path: String) {
        guard let (uid, gid) = owner(of: path) else { return }
        for file in paths { _ = lchown(file, uid, gid) }
    }

    /// `path`'s owner when this process is root and `path` belongs to another user.
    private static func owner(of path: String) -> (uid_t, gid_t)? {
        var st = stat()
        guard geteuid() == 0, stat(path, &st) == 0, st.st_uid != 0 else { return nil }
        return (st.st_uid, st.st_gid)
    }
}
