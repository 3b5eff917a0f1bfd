import AttestCore
#if canImport(Glibc)
import Glibc
#endif

/// The token signing keys of a data directory and the JWKS nginx serves, as functions of time.
///
/// ```
/// keys/index.json   {"keys": [KeyEntry, …]} newest first: each key's publishAt, activateAt,
///                   retireAt, withdrawAt (see KeyEntry); written only by `rotate`
/// keys/<file>.pem   PKCS #8 private key, mode 0600, deleted once the key is retired
/// keys/lock         flock(2)ed while index.json or jwks.json is written
/// jwks.json         {"keys": [public JWK, …]}: the keys pending, active or retired when written
/// ```
/// Nothing here reads the clock: the signer is the key active at the `now` given, and
/// `publish(now:)` makes jwks.json and the private key files match that time. Workers call it
/// once a second (`ServiceContext`), so a key leaves jwks.json and loses its private key at
/// the first request after its time comes; `attestctl keys` does the same.
public final class KeyRing: @unchecked Sendable {
    public let directory: String
    public let jwksPath: String
    public private(set) var entries: [KeyEntry] = []
    /// Private keys read so far, by kid.
    private var signers: [String: JWTSigner] = [:]
    private var loadedModification: Int64?
    /// The first transition after the last `publish`; nil: publish has work now.
    private var nextTransition: Timestamp?

    package var indexPath: String { directory + "/index.json" }
    var lockPath: String { directory + "/lock" }

    public init(directory: String, jwksPath: String) throws {
        self.directory = directory
        self.jwksPath = jwksPath
        try reload()
    }

    /// The key ring of a data directory.
    public convenience init(_ data: DataDirectory) throws {
        try self.init(directory: data.keysDirectory, jwksPath: data.jwksFile)
    }

    /// Rereads index.json if the file changed since the last load.
    public func reloadIfChanged() throws {
        if FileIO.modificationTime(indexPath) != loadedModification { try reload() }
    }

    package func reload() throws {
        loadedModification = FileIO.modificationTime(indexPath)
        nextTransition = nil
        guard let text = try FileIO.readText(indexPath) else { entries = []; signers = [:]; return }
        var parsed = try KeyIndex.parse(text)
        for i in parsed.indices where parsed[i].jwk == nil {
            if let key = try privateKey(parsed[i]) { parsed[i].jwk = try JWK.publicJWK(of: key) }
        }
        entries = parsed
        signers = signers.filter { kid, _ in parsed.contains { $0.kid == kid } }
    }

    /// The key that signs at `now`: the active one (the one activated last, should two be).
    public func activeEntry(at now: Timestamp) -> KeyEntry? {
        entries.filter { $0.state(at: now) == .active }.max { $0.activateAt < $1.activateAt }
    }

    /// The signer of the key active at `now`, or an error telling the operator what to run.
    public func signer(at now: Timestamp) throws -> JWTSigner {
        try signer(at: now, rereadIndex: true)
    }

    private func signer(at now: Timestamp, rereadIndex: Bool) throws -> JWTSigner {
        guard let entry = activeEntry(at: now) else {
            throw ConfigError(.keyRing, "no signing key is active at \(now.iso8601): run 'attestctl keys list', or "
                                        + "'attestctl keys rotate --now'")
        }
        if let signer = signers[entry.kid] { return signer }
        guard let key = try privateKey(entry) else {
            // Retired (and deleted) by a rotation this process has not read yet: read it.
            if rereadIndex { try reload(); return try signer(at: now, rereadIndex: false) }
            throw ConfigError(.keyRing, "signing key file \(entry.file) of the active key \(entry.kid) is missing")
        }
        let signer = try JWTSigner(key: key)
        signers[entry.kid] = signer
        return signer
    }

    private func privateKey(_ entry: KeyEntry) throws -> SigningKey? {
        try FileIO.readText(directory + "/" + entry.file).map { try SigningKey(pemEncoded: $0) }
    }

    /// The keys jwks.json lists at `now`.
    public func publishedEntries(at now: Timestamp) -> [KeyEntry] {
        entries.filter { $0.state(at: now).isPublished }
    }

    /// Makes the files match `now`: jwks.json lists exactly the published keys (rewritten
    /// atomically when it differs) and retired keys' private key files are deleted. Returns at
    /// once until the next transition time or an index change; returns whether a file changed.
    @discardableResult
    public func publish(now: Timestamp) throws -> Bool {
        if let next = nextTransition, now < next { return false }
        return try withLock {
            try reloadIfChanged()
            var changed = false
            let text = KeyIndex.jwksText(entries, at: now)
            if try FileIO.readText(jwksPath) != text {
                try FileIO.writeAtomically(jwksPath, text: text, mode: 0o644)
                changed = true
            }
            for entry in entries where entry.state(at: now) == .retired || entry.state(at: now) == .withdrawn {
                if unlink(directory + "/" + entry.file) == 0 { changed = true }
                signers[entry.kid] = nil
            }
            nextTransition = entries.flatMap(\.transitions).filter { $0 > now }.min() ?? Timestamp(seconds: .max)
            return changed
        }
    }

    /// Runs `body` holding keys/lock, so that jwks.json is never written from a stale index.
    package func withLock<T>(_ body: () throws -> T) throws -> T {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigError(.keyRing, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw ConfigError(.keyRing, "cannot lock \(lockPath): \(String(cString: strerror(errno)))")
            }
        }
        return try body()
    }
}
