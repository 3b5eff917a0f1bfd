import AttestCore

/// An organization's admin API key (`aat_…`). The key itself is shown once, when created;
/// only its SHA-256 is stored, under the key's first 12 characters (its public id, shown in
/// lists), and a presented key is checked by comparing hashes in constant time.
///
/// Key in `api_keys`: the id (`aat_` + 8 characters, UTF-8). Layout v2 (v1 had no scope: `all`):
/// ```
/// u8 2 | org string | name string | hash bytes (SHA-256 of the whole key, 32)
///      | createdAt i64 | revokedAt i64 (0 = active) | scope u8 (0 all, 1 heartbeat)
/// ```
public struct APIKeyRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 2
    public static let recordName = "api key"

    /// What a key may do: `all` (the usage and webhook management APIs, and heartbeats), or
    /// `heartbeat` alone: for a key built into simulator and CI apps, where anyone who
    /// unpacks the build can read it.
    public enum Scope: UInt8, Sendable, CaseIterable {
        case all = 0, heartbeat = 1
        public var name: String { String(describing: self) }
        public init?(name: String) {
            guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = found
        }
    }

    /// The key's first 12 characters; the record's key, not part of the value.
    public var id: String
    public var org: String
    public var name: String
    public var hash: [UInt8]
    public var createdAt: Timestamp
    public var revokedAt: Timestamp?
    public var scope: Scope

    public init(id: String, org: String, name: String, hash: [UInt8], createdAt: Timestamp, revokedAt: Timestamp? = nil,
                scope: Scope = .all) {
        self.id = id
        self.org = org
        self.name = name
        self.hash = hash
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.scope = scope
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(org)
        w.string(name)
        w.data(hash)
        w.i64(createdAt.seconds)
        w.i64(revokedAt?.seconds ?? 0)
        w.u8(scope.rawValue)
    }

    public init(from r: inout BinaryReader) throws {
        id = ""
        org = try r.string()
        name = try r.string()
        hash = try r.data()
        guard hash.count == 32 else { throw StoreError(.corrupt, "api key hash of \(hash.count) bytes") }
        createdAt = Timestamp(seconds: try r.i64())
        let revoked = try r.i64()
        revokedAt = revoked == 0 ? nil : Timestamp(seconds: revoked)
        if r.version >= 2 {
            let raw = try r.u8()
            guard let known = Scope(rawValue: raw) else { throw StoreError(.corrupt, "api key scope \(raw)") }
            scope = known
        } else {
            scope = .all
        }
    }
}

extension Transaction {
    public func apiKey(id: String) throws -> APIKeyRecord? {
        guard var record = try get(.apiKeys, Array(id.utf8)).map({ try APIKeyRecord(encoded: $0) }) else { return nil }
        record.id = id
        return record
    }

    public func put(_ key: APIKeyRecord) throws {
        try put(.apiKeys, Array(key.id.utf8), key.encoded())
    }

    /// Every key, in id order.
    public func apiKeys() throws -> [APIKeyRecord] {
        var found = [APIKeyRecord]()
        try scan(.apiKeys) { key, value in
            var record = try APIKeyRecord(encoded: value)
            record.id = String(decoding: key, as: UTF8.self)
            found.append(record)
            return true
        }
        return found
    }
}
