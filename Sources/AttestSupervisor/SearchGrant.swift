#if canImport(Glibc)
import Glibc
#endif

/// Search permission for one user on one directory, as a POSIX ACL entry (`u:NAME:x`, what
/// `setfacl -m u:NAME:x DIR` does), written straight into the `system.posix_acl_access`
/// attribute so no `acl` package is needed. The mode's owner and other bits stay as they are;
/// the group bits show the ACL mask (`drwx--x---+`), the owning group gains nothing.
///
/// Attribute layout (linux/posix_acl_xattr.h), little-endian:
/// ```
/// u32 version = 2,  then entries sorted by (tag, id):  u16 tag, u16 perm, u32 id
/// tags: USER_OBJ 0x01, USER 0x02, GROUP_OBJ 0x04, GROUP 0x08, MASK 0x10, OTHER 0x20
/// ```
enum SearchGrant {
    static let attribute = "system.posix_acl_access"
    static let noID: UInt32 = 0xFFFF_FFFF

    struct Entry: Equatable {
        var tag: UInt16
        var perm: UInt16
        var id: UInt32
    }

    /// Adds `u:<uid>:x` to `directory`'s access ACL (made from its mode when it has none) and
    /// makes sure the mask lets it through. Returns `false` when the file system refuses.
    static func grant(uid: uid_t, on directory: String) -> Bool {
        var st = stat()
        guard stat(directory, &st) == 0 else { return false }
        var entries = read(directory) ?? fromMode(UInt16(st.st_mode & 0o777))
        if let i = entries.firstIndex(where: { $0.tag == 0x02 && $0.id == uid }) {
            entries[i].perm |= 1
        } else {
            entries.append(Entry(tag: 0x02, perm: 1, id: uid))
        }
        let groupClass = entries.filter { [0x02, 0x04, 0x08].contains($0.tag) }.reduce(UInt16(0)) { $0 | $1.perm }
        if let i = entries.firstIndex(where: { $0.tag == 0x10 }) {
            entries[i].perm |= 1
        } else {
            entries.append(Entry(tag: 0x10, perm: groupClass, id: noID))
        }
        entries.sort { ($0.tag, $0.id) < ($1.tag, $1.id) }
        let bytes = encode(entries)
        return bytes.withUnsafeBytes { setxattr(directory, attribute, $0.baseAddress, $0.count, 0) } == 0
    }

    /// Whether `directory`'s ACL lets `uid` search it through an entry naming it.
    static func allows(uid: uid_t, on directory: String) -> Bool {
        guard let entries = read(directory), let own = entries.first(where: { $0.tag == 0x02 && $0.id == uid }) else {
            return false
        }
        let mask = entries.first { $0.tag == 0x10 }?.perm ?? 7
        return own.perm & mask & 1 != 0
    }

    /// The minimal ACL equivalent to `mode` (owner, group, other).
    static func fromMode(_ mode: UInt16) -> [Entry] {
        [Entry(tag: 0x01, perm: mode >> 6 & 7, id: noID), Entry(tag: 0x04, perm: mode >> 3 & 7, id: noID),
         Entry(tag: 0x20, perm: mode & 7, id: noID)]
    }

    static func read(_ path: String) -> [Entry]? {
        let size = getxattr(path, attribute, nil, 0)
        guard size >= 4 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let n = bytes.withUnsafeMutableBytes { getxattr(path, attribute, $0.baseAddress, $0.count) }
        guard n == size, (n - 4) % 8 == 0, le32(bytes, 0) == 2 else { return nil }
        return stride(from: 4, to: n, by: 8).map { at -> Entry in
            let tag = UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
            let perm = UInt16(bytes[at + 2]) | UInt16(bytes[at + 3]) << 8
            return Entry(tag: tag, perm: perm, id: le32(bytes, at + 4))
        }
    }

    // <sys/xattr.h> is not part of the Glibc module: the two calls are looked up in libc.
    private typealias SetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?,
                                                 Int, Int32) -> Int32
    private typealias GetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>,
                                                 UnsafeMutableRawPointer?, Int) -> Int

    private static func setxattr(_ path: String, _ name: String, _ value: UnsafeRawPointer?, _ size: Int,
                                 _ flags: Int32) -> Int32 {
        guard let symbol = dlsym(nil, "setxattr") else { return -1 }
        return unsafeBitCast(symbol, to: SetXattr.self)(path, name, value, size, flags)
    }

    private static func getxattr(_ path: String, _ name: String, _ value: UnsafeMutableRawPointer?,
                                 _ size: Int) -> Int {
        guard let symbol = dlsym(nil, "getxattr") else { return -1 }
        return unsafeBitCast(symbol, to: GetXattr.self)(path, name, value, size)
    }

    static func encode(_ entries: [Entry]) -> [UInt8] {
        var out: [UInt8] = [2, 0, 0, 0]
        for e in entries {
            out += [UInt8(e.tag & 0xFF), UInt8(e.tag >> 8), UInt8(e.perm & 0xFF), UInt8(e.perm >> 8)]
            out += [UInt8(e.id & 0xFF), UInt8(e.id >> 8 & 0xFF), UInt8(e.id >> 16 & 0xFF), UInt8(e.id >> 24)]
        }
        return out
    }

    private static func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }
}
