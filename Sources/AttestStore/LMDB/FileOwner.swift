#if canImport(Glibc)
import Glibc
#endif

/// Files the store creates beside LMDB's own (`sync.state`, `ephemeral.boot`, a recreated
/// ephemeral environment): when root (attestctl) creates them in a data directory another
/// user owns, they go to that user, so the service user can still open them.
///
/// The directory is that user's, so what is there may have been planted: the callers open
/// without following a link (`O_NOFOLLOW`), and only a regular file with one name is handed
/// over (a hard link to another file would hand that file over).
enum FileOwner {
    static func match(_ fd: Int32, of path: String) {
        guard let (uid, gid) = owner(of: path), isPlainFile(fd) else { return }
        _ = fchown(fd, uid, gid)
    }

    /// Whether `fd` is a regular file with one name: what may be written and handed over.
    static func isPlainFile(_ fd: Int32) -> Bool {
        var st = stat()
        return fstat(fd, &st) == 0 && st.st_mode & S_IFMT == S_IFREG && st.st_nlink == 1
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
