import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// The layout of a data directory; everything a deployment keeps lives under it.
///
/// ```
/// config.json              the configuration (ConfigurationKey.all documents every key)
/// secrets/challenge.key    32 random bytes: the challenge HMAC key (0600)
/// keys/                    token signing keys and index.json (see KeyRing)
/// jwks.json                the public keys, served by nginx
/// store/                   LMDB: durable/ and ephemeral/
/// test-ca/                 a test CA for attest-device, only with `attestctl init --test-ca`
/// run/ log/ nginx/         sockets, logs and the rendered nginx configuration (attestctl serve)
/// ```
public struct DataDirectory: Sendable {
    public let path: String

    public init(_ path: String) { self.path = FileIO.absolute(path) }

    public var configFile: String { path + "/config.json" }
    public var challengeKeyFile: String { path + "/secrets/challenge.key" }
    public var keysDirectory: String { path + "/keys" }
    public var jwksFile: String { path + "/jwks.json" }
    public var storeDirectory: String { path + "/store" }
    public var testCADirectory: String { path + "/test-ca" }
    public var runDirectory: String { path + "/run" }
    public var logDirectory: String { path + "/log" }
    public var nginxDirectory: String { path + "/nginx" }

    public var isInitialised: Bool { FileIO.exists(configFile) && FileIO.exists(challengeKeyFile) }

    /// The configuration; a clear error when the directory was never initialised or the file is bad.
    /// `config.json`, read without following a link and refused past `maxConfigurationBytes`:
    /// root (`attestctl serve`) reads it from a directory the service user can write, where a
    /// link to /dev/zero would otherwise grow root's memory without end.
    public func loadConfiguration() throws -> Configuration {
        guard FileIO.exists(configFile),
              let bytes = try PinnedDirectory.open(path).read("config.json", atMost: Self.maxConfigurationBytes) else {
            throw Configuration.Problem(message: "\(path) is not an AttestEdge data directory (no config.json): run 'attestctl init --data \(path)'")
        }
        return try Configuration(jsonText: String(decoding: bytes, as: UTF8.self))
    }

    /// The largest config.json read (1 MiB; the full default document is about 2 KiB).
    public static let maxConfigurationBytes = 1 << 20

    public func save(_ configuration: Configuration) throws {
        try FileIO.writeAtomically(configFile, text: configuration.json.prettyJSONText + "\n", mode: 0o644)
    }

    public func challengeSecret() throws -> [UInt8] {
        guard let secret = try FileIO.read(challengeKeyFile), secret.count == 32 else {
            throw Configuration.Problem(message: "\(challengeKeyFile) is missing or not 32 bytes: run 'attestctl init'")
        }
        return secret
    }

    /// Creates the directories that are missing (secrets and keys 0700, the others 0755);
    /// returns them.
    @discardableResult
    public func makeLayout() throws -> [String] {
        var created = [String]()
        for dir in [path, path + "/secrets", keysDirectory, storeDirectory, runDirectory, logDirectory, nginxDirectory] where !FileIO.exists(dir) {
            try FileIO.makeDirectories(dir, mode: dir.hasSuffix("/secrets") || dir.hasSuffix("/keys") ? 0o700 : 0o755)
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
