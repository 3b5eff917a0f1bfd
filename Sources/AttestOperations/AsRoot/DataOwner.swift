import AttestConfig
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// The data directory `argv` names (`--data`), else ATTEST_EDGE_DATA, else ./var.
package func dataPath(_ argv: [String]) -> String {
    var flag: String?
    for (i, arg) in argv.enumerated() {
        if arg == "--data", i + 1 < argv.count { flag = argv[i + 1] }
        if arg.hasPrefix("--data=") { flag = String(arg.dropFirst(7)) }
    }
    return DataDirectory.path(flag: flag)
}

/// Root on a data directory that belongs to another user: `store.postgres.url` is in
/// config.json, that user's to write, and libpq fills what a URL leaves out from the PG*
/// variables and a password file (PGPASSFILE, else ~/.pgpass). A URL naming a server of that
/// user's choice under a host name root saved a password for (`host=db1 hostaddr=127.0.0.1
/// port=…`) would be sent root's PGPASSWORD or that saved password. So, before anything
/// connects, every PG* variable goes and PGPASSFILE names a file that cannot exist: the URL
/// alone says how to connect, as it does for the pools. (A `passfile=` in the URL itself is
/// read with the owner's rights: the commands that connect act as it, `actAsDataOwner` or
/// `asDataOwner`.) `path`: the data directory (`dataPath`).
package func forgetRootsPostgresDefaults(_ path: String) {
    var st = stat()
    guard geteuid() == 0, stat(path, &st) == 0, st.st_uid != 0 else { return }
    let names = environmentEntries().compactMap { entry in
        entry.hasPrefix("PG") ? entry.split(separator: "=", maxSplits: 1).first.map(String.init) : nil
    }
    for name in names { unsetenv(name) }
    setenv("PGPASSFILE", "/dev/null/attestedge-no-password-file", 1)
}

/// Run as root on a data directory that belongs to another user (`attestctl serve` hands it
/// to `server.user`), the commands that write into it act as that user: a rotated signing key
/// (0600), config.json and the store's files stay readable by the pools, which run as it.
/// Exits with status 1 if the switch fails, saying so as `program`. `path`: the data
/// directory (`dataPath`), for a command that writes into it.
package func actAsDataOwner(_ path: String, program: String) {
    guard geteuid() == 0 else { return }
    var st = stat()
    guard stat(path, &st) == 0, st.st_uid != 0, let pw = getpwuid(st.st_uid) else { return }
    var count: Int32 = 64
    var groups = [gid_t](repeating: 0, count: Int(count))
    if getgrouplist(pw.pointee.pw_name, pw.pointee.pw_gid, &groups, &count) < 0 {
        groups = [pw.pointee.pw_gid]; count = 1
    }
    guard setgroups(Int(count), groups) == 0, setgid(pw.pointee.pw_gid) == 0, setuid(st.st_uid) == 0 else {
        Output.err("\(program): \(path) belongs to uid \(st.st_uid); cannot act as it: "
                   + "\(String(cString: strerror(errno)))")
        exit(1)
    }
}

/// Runs `body` with the data directory's owner as effective user and group (when root runs a
/// command that must keep root for something else: `backup` writing its file, `doctor`): what a library
/// opens by path under the data directory (LMDB's data.mdb and lock.mdb, opened for writing,
/// links followed) is then opened with the owner's rights only. The real and saved IDs stay
/// root's, so the owner can neither signal nor trace the process meanwhile; root's IDs and
/// groups come back afterwards. Runs `body` as is when not root or the owner is root.
package func asDataOwner<T>(_ data: DataDirectory, _ body: () throws -> T) throws -> T {
    var st = stat()
    guard geteuid() == 0, stat(data.path, &st) == 0, st.st_uid != 0 else { return try body() }
    var savedGroups = [gid_t](repeating: 0, count: Int(max(getgroups(0, nil), 0)))
    savedGroups = Array(savedGroups.prefix(Int(max(getgroups(Int32(savedGroups.count), &savedGroups), 0))))
    let savedGID = getegid()
    var ownerGroup = [st.st_gid]
    guard setgroups(1, &ownerGroup) == 0, setegid(st.st_gid) == 0, seteuid(st.st_uid) == 0 else {
        throw OperationsError(.dataOwner, "cannot act as uid \(st.st_uid), the owner of \(data.path): "
                                          + "\(String(cString: strerror(errno)))")
    }
    defer {
        if seteuid(0) != 0 || setegid(savedGID) != 0 || setgroups(savedGroups.count, savedGroups) != 0 {
            Output.err("attestctl: cannot take root's identity back: \(String(cString: strerror(errno)))")
            exit(1)
        }
    }
    return try body()
}
