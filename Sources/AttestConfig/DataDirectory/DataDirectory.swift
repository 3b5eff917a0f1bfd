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

    /// The data directory `--data` names (`flag`; `nil` when not given), found as `path(flag:)` says.
    public init(flag: String?) { self.init(Self.path(flag: flag)) }

    /// Where a program's data directory is: `--data DIR` (`flag`), else `$ATTEST_EDGE_DATA`,
    /// else `./var`. The one place attestctl, the pools and attest-webhooks resolve it.
    public static func path(flag: String?) -> String { flag ?? environment("ATTEST_EDGE_DATA") ?? "./var" }

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
            throw ConfigError(.missing, "\(path) is not an AttestEdge data directory (no config.json): run 'attestctl "
                                        + "init --data \(path)'")
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
            throw ConfigError(.missing, "\(challengeKeyFile) is missing or not 32 bytes: run 'attestctl init'")
        }
        return secret
    }
}
