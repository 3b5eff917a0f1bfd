import AttestConfig
import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// Making a data directory (`attestctl init`, `attestctl serve` on a new directory, `restore`):
/// operations only; serving reads what these wrote (`DataDirectory`).
extension DataDirectory {
    /// DATA/run's mode: its owner (who runs the pools, and nginx under `attestctl serve`) and
    /// its group; never other accounts. nginx makes the publisher socket in it 0666.
    public static let runDirectoryMode: mode_t = 0o750

    /// Creates the directories that are missing (secrets and keys 0700, run 0750, the others
    /// 0755); returns them. DATA/run holds nginx's flag-stream publisher socket, which nginx
    /// makes 0666: the directory is what keeps other accounts from publishing to every stream
    /// (`runDirectoryMode`).
    @discardableResult
    public func makeLayout() throws -> [String] {
        var created = [String]()
        for dir in [path, path + "/secrets", keysDirectory, storeDirectory, runDirectory, logDirectory,
                    nginxDirectory] where !FileIO.exists(dir) {
            let mode: mode_t = dir.hasSuffix("/secrets") || dir.hasSuffix("/keys") ? 0o700
                : dir == runDirectory ? Self.runDirectoryMode : 0o755
            try FileIO.makeDirectories(dir, mode: mode)
            created.append(dir)
        }
        return created
    }

    /// Creates whatever is missing: directories, config.json, the challenge secret, a first
    /// signing key and the JWKS. Existing files are kept. Returns what it created.
    @discardableResult
    public func initialise(configuration: Configuration = .newDataDirectory, random: any RandomSource = SystemRandom(),
                           now: Timestamp) throws -> [String] {
        var created = try makeLayout()
        if !FileIO.exists(configFile) {
            try save(configuration)
            created.append(configFile)
        }
        if !FileIO.exists(challengeKeyFile) {
            try FileIO.writeAtomically(challengeKeyFile, random.bytes(32), mode: 0o600)
            created.append(challengeKeyFile)
        }
        let ring = try KeyRing(self)
        let config = try loadConfiguration()
        if !ring.entries.contains(where: { $0.state(at: now) == .active || $0.state(at: now) == .pending }) {
            // Nothing signs now or will: the new key is active at once (rotate's rule).
            let entry = try ring.rotate(algorithm: config.tokenAlgorithm.rawValue, now: now,
                                        publicationDelay: Int64(config.publicationDelaySeconds),
                                        overlap: Int64(config.rotationOverlapSeconds))
            created.append(keysDirectory + "/" + entry.file)
            created.append(jwksFile)
        } else if !FileIO.exists(jwksFile) {
            try ring.publish(now: now)
            created.append(jwksFile)
        }
        return created
    }
}
