import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// The ephemeral environment after the machine restarted: recreated empty, with a cutoff.
///
/// That environment commits without any sync (`MDB_NOSYNC`), and LMDB documents that a system
/// crash can then leave it corrupt: writeback may put a meta page on disk before the pages it
/// points to, and ext4 does not promise to keep the order. What it holds is short-lived (used
/// challenges until their expiry, rate-limit windows of a minute), so the first process to open
/// the store after a reboot, of any kind, deletes it and records when; a process death alone
/// (same boot) keeps it, since the page cache survives that.
///
/// Forgetting used challenges must not revive them: `cutoff` is the wall-clock second of the
/// reset, and admission refuses a challenge issued before it as expired (a challenge carries its
/// issue time; `ChallengeAuthority`); clients fetch a new one.
///
/// `<store>/ephemeral.boot`, 0600, read and written under `flock(LOCK_EX)`:
/// ```
/// <boot id from /proc/sys/kernel/random/boot_id> <cutoff, Unix seconds; 0: never reset>\n
/// ```
/// When the file cannot be created (a read-only data directory) or the boot id cannot be read,
/// nothing is reset and the cutoff is 0. Nor is anything reset while another process has the
/// environment open (LMDB's lock on `lock.mdb`): processes do not outlive a reboot, so that is
/// a store upgraded from a build without this file, whose running workers keep their files.
enum EphemeralReset {
    static let bootIDPath = "/proc/sys/kernel/random/boot_id"

    /// Checks `<store>/ephemeral.boot` against `bootID`; when it differs and an ephemeral
    /// environment exists, deletes that environment's files. Returns the cutoff in force, and
    /// whether this call deleted them. Call before opening the ephemeral environment.
    static func prepare(store directory: String, bootID: String? = currentBootID(),
                        now: Int64) throws -> (cutoff: Int64, reset: Bool) {
        guard let bootID, !bootID.isEmpty else { return (0, false) }
        let path = directory + "/ephemeral.boot"
        // Not through a link: the store's directory may be another user's (FileOwner).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { return (0, false) }
        defer { close(fd) }
        guard FileOwner.isPlainFile(fd) else {
            throw StoreError(.open, "\(path) is not a regular file with one name (a hard link?): remove it")
        }
        FileOwner.match(fd, of: directory)
        while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
        defer { flock(fd, LOCK_UN) }
        let recorded = readAll(fd).split(separator: " ", omittingEmptySubsequences: true)
        let cutoff: Int64
        if recorded.count == 2, recorded[0] == bootID {
            return (Int64(recorded[1].trimmingWhitespace) ?? 0, false)
        } else if access(directory + "/ephemeral/data.mdb", F_OK) == 0,
                  attest_lmdb_in_use(directory + "/ephemeral/lock.mdb") == 0 {
            for file in ["data.mdb", "lock.mdb"] {
                let target = directory + "/ephemeral/" + file
                guard unlink(target) == 0 || errno == ENOENT else {
                    throw StoreError(.open,
                                     "cannot reset \(target) after a restart: \(String(cString: strerror(errno)))")
                }
            }
            cutoff = now
        } else {
            // A new store (nothing was ever admitted), or one that processes have open: they
            // started in this boot (a store from before this mechanism, being upgraded), and
            // deleting the files under them would split single use between two files.
            cutoff = 0
        }
        let line = Array("\(bootID) \(cutoff)\n".utf8)
        guard ftruncate(fd, 0) == 0, pwrite(fd, line, line.count, 0) == line.count else {
            throw StoreError(.open, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return (cutoff, cutoff > 0)
    }

    static func currentBootID() -> String? {
        let fd = open(bootIDPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let text = readAll(fd).trimmingWhitespace
        return text.isEmpty ? nil : text
    }

    private static func readAll(_ fd: Int32) -> String {
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 256)
        var offset: off_t = 0
        while bytes.count < 4096 {
            let n = pread(fd, &chunk, chunk.count, offset)
            guard n > 0 else { break }
            bytes += chunk[..<n]
            offset += off_t(n)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

private extension StringProtocol {
    var trimmingWhitespace: String {
        String(drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }
}
