import AttestConfig
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// The unprivileged account nginx's workers and the pools run as when `attestctl serve` starts
/// as root (`server.user`, default `attestedge`). nginx's master runs as this user too, with
/// only CAP_NET_BIND_SERVICE kept when the port is below 1024: what it opens by path under the
/// data directory (this user's) is opened with this user's rights.
package struct ServiceUser: Equatable {
    static let defaultName = "attestedge"

    let name: String
    package let uid: uid_t
    package let gid: gid_t
    let groupName: String
    /// Supplementary groups, primary group included.
    let groups: [gid_t]
    /// Its home directory (passwd), the `HOME` of what runs as it.
    var home = "/"

    /// nginx's `user` directive: `user group`.
    var nginxUser: String { name + " " + groupName }

    package var credentials: ChildProcess.Credentials { .init(uid: uid, gid: gid, groups: groups, home: home) }

    /// The account named `name`, or `nil` when there is none. Looked up with the reentrant
    /// calls: `getpwnam` and `getgrgid` return static buffers another thread's lookup can
    /// overwrite (the tests run in parallel; one once read root's group as "nogroup").
    package static func lookUp(_ name: String) -> ServiceUser? {
        var buffer = [CChar](repeating: 0, count: 16_384)
        var pw = passwd(), found: UnsafeMutablePointer<passwd>?
        guard getpwnam_r(name, &pw, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        let uid = pw.pw_uid, gid = pw.pw_gid, home = pw.pw_dir.map { String(cString: $0) } ?? "/"
        var group = Glibc.group(), foundGroup: UnsafeMutablePointer<Glibc.group>?
        var groupBuffer = [CChar](repeating: 0, count: 16_384)
        let groupName = getgrgid_r(gid, &group, &groupBuffer, groupBuffer.count, &foundGroup) == 0 && foundGroup != nil
            ? String(cString: group.gr_name) : String(gid)
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, gid, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, gid, &list, &count)
        }
        return ServiceUser(name: name, uid: uid, gid: gid, groupName: groupName,
                           groups: Array(list.prefix(Int(max(count, 0)))), home: home)
    }

    /// The account `serve` uses as root: `name` if it exists; the default account is created
    /// (a system user with its own group, no home directory, no login shell) when missing.
    static func resolve(_ name: String) throws -> ServiceUser {
        if let user = lookUp(name) { return user }
        guard name == defaultName else {
            throw SupervisorError(.serviceUser, "server.user \"\(name)\" does not exist: create it, or set server.user "
                                                + "back to \(defaultName) (created automatically)")
        }
        guard let useradd = findProgram("useradd") else {
            throw SupervisorError(.serviceUser, "cannot create the user \(name): useradd is not installed")
        }
        let status = try runTool(useradd, ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                                            "--shell", "/usr/sbin/nologin", "--comment", "AttestEdge", name])
        guard status == 0, let user = lookUp(name) else {
            throw SupervisorError(.serviceUser, "useradd \(name) failed (status \(status))")
        }
        Output.out("created the system user \(name): nginx's workers and the pools run as it")
        return user
    }

    /// Hands `path` and everything under it to this user and its group; permission bits are
    /// kept (keys stay 0600). `path` itself is root's choice; below it, the walk goes through
    /// directory descriptors (`PinnedDirectory`): each entry is opened as a path descriptor
    /// without following a link (`O_PATH | O_NOFOLLOW`), checked through it and changed through
    /// it (`fchownat` with `AT_EMPTY_PATH`), so a link is handed over itself, never what it
    /// points to; an entry swapped between the check and the change is not the one changed; a
    /// file with several names (a hard link to a file elsewhere) is skipped; and a directory
    /// swapped for a link during the walk is refused. Root never chowns a file outside `path`.
    func takeOwnership(of path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw SupervisorError(.serviceUser, "cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        if st.st_uid != uid || st.st_gid != gid, chown(path, uid, gid) != 0 {
            throw SupervisorError(.serviceUser, "cannot hand \(path) to \(name): \(String(cString: strerror(errno)))")
        }
        do { try takeOwnership(inside: PinnedDirectory.open(path)) } catch let failure as ConfigError {
            throw SupervisorError(.serviceUser, "cannot hand \(path) to \(name): \(failure)")
        }
    }

    private func takeOwnership(inside directory: PinnedDirectory) throws {
        for entry in directory.names() {
            let fd = openat(directory.descriptor, entry, Self.pathOnly | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }  // gone meanwhile
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0 else { continue }
            let isDirectory = st.st_mode & S_IFMT == S_IFDIR
            if !isDirectory && st.st_nlink > 1 { continue }
            if st.st_uid != uid || st.st_gid != gid, fchownat(fd, "", uid, gid, Self.emptyPath) != 0 {
                throw SupervisorError(.serviceUser, "cannot hand \(directory.path)/\(entry) to \(name): "
                                                    + "\(String(cString: strerror(errno)))")
            }
            if isDirectory { try takeOwnership(inside: directory.directory(entry)) }
        }
    }

    /// `O_PATH` and `AT_EMPTY_PATH` (Linux; glibc declares them only under _GNU_SOURCE).
    static let pathOnly: Int32 = 0o10000000
    static let emptyPath: Int32 = 0x1000

    /// The first directory on the way to `path` (its ancestors, then itself if a directory)
    /// this user may not search, or `nil` when it can reach `path`. Mode bits, and ACL entries
    /// naming this user (`SearchGrant`).
    func firstUnreachable(_ path: String) -> String? {
        var prefix = ""
        for part in ["/"] + path.split(separator: "/").map(String.init) {
            prefix = part == "/" ? "/" : (prefix == "/" ? "/" + part : prefix + "/" + part)
            var st = stat()
            guard stat(prefix, &st) == 0 else { return prefix }
            guard st.st_mode & S_IFMT == S_IFDIR else { continue }
            let bit: mode_t = st.st_uid == uid ? S_IXUSR : (groups.contains(st.st_gid) ? S_IXGRP : S_IXOTH)
            if uid != 0 && st.st_mode & bit == 0 && !SearchGrant.allows(uid: uid, on: prefix) { return prefix }
        }
        return nil
    }

    /// Makes `path` reachable: each directory on the way that blocks this user gets a search
    /// ACL entry for it alone (`SearchGrant`); returns those directories.
    /// - Throws: when a directory cannot be granted (a file system without ACLs, a missing path).
    func makeReachable(_ path: String) throws -> [String] {
        var granted = [String]()
        while let blocked = firstUnreachable(path) {
            guard !granted.contains(blocked), SearchGrant.grant(uid: uid, on: blocked) else {
                throw SupervisorError(.serviceUser, """
                    \(path) is not reachable by the user \(name) (server.user): \(blocked) does not let it through \
                    and cannot be given an ACL entry. Use a directory it can reach (e.g. under /var/lib or /srv), \
                    allow it in (chmod o+x \(blocked)), or set server.user.
                    """)
            }
            granted.append(blocked)
        }
        return granted
    }
}

/// Runs a tool to completion with serve's own output; returns its exit status (-1 if it could not start).
func runTool(_ program: String, _ arguments: [String]) throws -> Int32 {
    let argv = ([program] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, program, nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
}
