import AttestCore

/// The token signing keys of a data directory and the JWKS nginx serves.
///
/// ```
/// keys/index.json   {"keys": [{"kid", "algorithm", "file", "createdAt", "retiresAt"|null}, …]}  newest first
/// keys/<file>.pem   PKCS #8 private key, mode 0600
/// jwks.json         {"keys": [public JWK, …]}: the active key and rotated-out keys until retiresAt
/// ```
/// The active key is the newest one without `retiresAt`. Workers reload when index.json changes.
public final class KeyRing: @unchecked Sendable {
    public struct Entry: Sendable, Equatable {
        public let kid: String
        public let algorithm: String
        public let file: String
        public let createdAt: Timestamp
        public var retiresAt: Timestamp?
    }

    public let directory: String
    public private(set) var entries: [Entry] = []
    public private(set) var signer: JWTSigner?
    private var loadedModification: Int64?

    var indexPath: String { directory + "/index.json" }

    public init(directory: String) throws {
        self.directory = directory
        try reload()
    }

    /// Rereads index.json and the active key if the file changed since the last load.
    public func reloadIfChanged() throws {
        if FileIO.modificationTime(indexPath) != loadedModification { try reload() }
    }

    func reload() throws {
        loadedModification = FileIO.modificationTime(indexPath)
        guard let text = try FileIO.readText(indexPath) else { entries = []; signer = nil; return }
        entries = try Self.parseIndex(text)
        guard let active = entries.first(where: { $0.retiresAt == nil }) else { signer = nil; return }
        guard let pem = try FileIO.readText(directory + "/" + active.file) else {
            throw KeyRingError("signing key file \(active.file) is missing")
        }
        signer = try JWTSigner(key: SigningKey(pemEncoded: pem))
    }

    /// The signer of the active key, or an error telling the operator what to run.
    public func activeSigner() throws -> JWTSigner {
        guard let signer else { throw KeyRingError("no active signing key: run 'attestctl keys rotate'") }
        return signer
    }

    /// Makes a new active key; the previous active key retires at `now + overlap` and stays in
    /// the JWKS until then. Writes the key (0600), index.json and `jwksPath` atomically.
    @discardableResult
    public func rotate(algorithm: String, now: Timestamp, overlapSeconds: Int64, jwksPath: String) throws -> Entry {
        let key = try SigningKey.generate(algorithm == "RS256" ? .rsa2048 : .p256)
        let kid = try JWK.thumbprint(of: key)
        let file = "key-\(now.seconds)-\(kid.prefix(8)).pem"
        try FileIO.writeAtomically(directory + "/" + file, text: key.pemEncoded, mode: 0o600)
        var updated = entries.filter { $0.retiresAt.map { $0 > now } ?? true }
        for i in updated.indices where updated[i].retiresAt == nil { updated[i].retiresAt = now + overlapSeconds }
        let entry = Entry(kid: kid, algorithm: key.jwtAlgorithm, file: file, createdAt: now, retiresAt: nil)
        updated.insert(entry, at: 0)
        try FileIO.writeAtomically(indexPath, text: Self.indexJSON(updated).prettyJSONText + "\n", mode: 0o600)
        try reload()
        try writeJWKS(jwksPath, now: now)
        return entry
    }

    /// The keys a verifier should accept at `now`.
    public func publishedEntries(now: Timestamp) -> [Entry] {
        entries.filter { $0.retiresAt.map { $0 > now } ?? true }
    }

    /// Writes the JWKS of the published keys.
    public func writeJWKS(_ path: String, now: Timestamp) throws {
        var keys = [SigningKey]()
        for entry in publishedEntries(now: now) {
            guard let pem = try FileIO.readText(directory + "/" + entry.file) else { continue }
            keys.append(try SigningKey(pemEncoded: pem))
        }
        try FileIO.writeAtomically(path, text: JWK.set(keys).jsonText + "\n", mode: 0o644)
    }

    static func indexJSON(_ entries: [Entry]) -> JSONValue {
        ["keys": .array(entries.map { e in
            ["kid": .string(e.kid), "algorithm": .string(e.algorithm), "file": .string(e.file),
             "createdAt": .string(e.createdAt.iso8601), "retiresAt": e.retiresAt.map { .string($0.iso8601) } ?? .null]
        })]
    }

    static func parseIndex(_ text: String) throws -> [Entry] {
        let root = try JSONParser.parse(text)
        guard let list = root["keys"]?.arrayValue else { throw KeyRingError("keys/index.json has no keys array") }
        return try list.map { item in
            guard let kid = item["kid"]?.stringValue, let alg = item["algorithm"]?.stringValue,
                  let file = item["file"]?.stringValue, !file.contains("/"),
                  let created = item["createdAt"]?.stringValue.flatMap(Timestamp.init(iso8601:)) else {
                throw KeyRingError("keys/index.json has a malformed entry")
            }
            let retires = item["retiresAt"]?.stringValue.flatMap(Timestamp.init(iso8601:))
            return Entry(kid: kid, algorithm: alg, file: file, createdAt: created, retiresAt: retires)
        }
    }
}

public struct KeyRingError: Error, CustomStringConvertible, Sendable {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
