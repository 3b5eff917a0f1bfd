import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// The teams' DeviceCheck keys (`attestctl apple key add|list|remove`), beside the token
/// signing keys; backups carry them like those.
///
/// ```
/// DATA/keys/apple/<TEAM>.p8     the key as Apple issued it (PKCS #8 PEM), 0600
/// DATA/keys/apple/<TEAM>.keyid  its 10-character key id and a newline, 0600
/// ```
/// Every file is opened through `PinnedDirectory` (no link followed, regular files only,
/// bounded reads); team ids are `DeviceCheckKey.isIdentifier` (no path characters). The key
/// is never printed: `list` shows the team, the key id and the public key's SHA-256.
public struct AppleKeyStore {
    public struct Listed: Sendable {
        public let teamID: String
        public let keyID: String
        /// SHA-256 of the public key's SubjectPublicKeyInfo, hex: tells keys apart, reveals nothing.
        public let publicKeySHA256: String
    }

    /// `DATA/keys`: opened as it is; `apple` below it is never a link.
    public let keysDirectory: String
    public var directory: String { keysDirectory + "/apple" }

    public init(_ data: DataDirectory) { keysDirectory = data.keysDirectory }

    /// `keys/apple`, created (0700) when `create`; nil when absent and not created.
    private func pinned(create: Bool) throws -> PinnedDirectory? {
        if !create && !FileIO.exists(directory) { return nil }
        if create { try FileIO.makeDirectories(keysDirectory, mode: 0o700) }
        return try PinnedDirectory.open(keysDirectory).directory("apple", create: create ? 0o700 : nil)
    }

    /// Stores `key` for its team, replacing one there (written aside, then renamed in).
    public func add(_ key: DeviceCheckKey) throws {
        guard let dir = try pinned(create: true) else { return }
        try write(Array(key.key.pemEncoded.utf8), "\(key.teamID).p8", in: dir)
        try write(Array((key.keyID + "\n").utf8), "\(key.teamID).keyid", in: dir)
    }

    /// The team's key, or nil when none is registered.
    /// - Throws: `ConfigError` for a refused file; `AttestError` for a key that does not parse.
    public func key(team: String) throws -> DeviceCheckKey? {
        guard DeviceCheckKey.isIdentifier(team), let dir = try pinned(create: false) else { return nil }
        guard let pem = try dir.read("\(team).p8", atMost: DeviceCheckKey.maxPEMBytes),
              let id = try dir.read("\(team).keyid", atMost: 64) else { return nil }
        let keyID = String(decoding: id, as: UTF8.self).trimmingCharacters(in: "\n")
        return try DeviceCheckKey(teamID: team, keyID: keyID, pem: String(decoding: pem, as: UTF8.self))
    }

    /// The teams with a key, sorted.
    public func teams() -> [String] {
        guard let dir = try? pinned(create: false) else { return [] }
        return dir.names().compactMap { name in
            guard name.hasSuffix(".p8") else { return nil }
            let team = String(name.dropLast(3))
            return DeviceCheckKey.isIdentifier(team) ? team : nil
        }
    }

    /// Each registered key, without the key; a file that does not load is skipped.
    public func list() -> [Listed] {
        teams().compactMap { team in
            guard let key = try? key(team: team) else { return nil }
            return Listed(teamID: team, keyID: key.keyID,
                          publicKeySHA256: Hex.encode(SHA256.hash(key.key.subjectPublicKeyInfo)))
        }
    }

    /// Removes the team's key; whether there was one.
    public func remove(team: String) throws -> Bool {
        guard DeviceCheckKey.isIdentifier(team), let dir = try pinned(create: false) else { return false }
        let had = dir.status("\(team).p8") != nil
        dir.remove("\(team).p8")
        dir.remove("\(team).keyid")
        return had
    }

    private func write(_ bytes: [UInt8], _ name: String, in dir: PinnedDirectory) throws {
        let temporary = name + ".new"
        let fd = try dir.create(temporary, mode: 0o600)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else {
            dir.remove(temporary)
            throw ConfigError.failed("cannot write", dir.path + "/" + temporary)
        }
        try dir.rename(temporary, to: name)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set || $0 == "\r" }.reversed())
    }
}
