import AttestCore
import AttestStore
import FastCGI

/// Organization API keys (`aat_…`, docs/contract.md §8): shown once when created, stored as SHA-256.
///
/// ```
/// key = "aat_" ‖ base64url(24 random bytes)     (36 characters; the first 12 are its id)
/// ```
public enum APIKeys {
    public static let prefix = "aat_"
    static let idLength = 12

    /// A new key and its record, not yet stored.
    public static func generate(org: String, name: String, scope: APIKeyRecord.Scope = .all, random: any RandomSource,
                                now: Timestamp) -> (key: String, record: APIKeyRecord) {
        let key = prefix + Base64.encode(random.bytes(24), url: true)
        return (key, APIKeyRecord(id: String(key.prefix(idLength)), org: org, name: name,
                                  hash: SHA256.hash(key.utf8), createdAt: now, scope: scope))
    }

    /// What a request uses a key for: a heartbeat (any key), or the usage or webhook
    /// management API (a key of scope `all`).
    enum Use { case heartbeat, management }

    /// The bearer credential of `Authorization: Bearer …`, or `nil` when there is none.
    static func bearer(_ request: Request) -> String? {
        guard let value = request.params["HTTP_AUTHORIZATION"]?.trimmedNonEmpty else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmedNonEmpty
    }

    /// The organization of an active API key (401 `unauthorized` otherwise): the record is
    /// found by the key's id and the key's SHA-256 compared with the stored one in constant time.
    /// A key of scope `heartbeat` used for the management APIs is 403 `forbidden`.
    static func organization(apiKey key: String, for use: Use, _ ctx: ServiceContext) throws -> OrgRecord {
        try holder(apiKey: key, for: use, ctx).org
    }

    /// The organization and the record of an active API key, judged as `organization` does.
    static func holder(apiKey key: String, for use: Use, _ ctx: ServiceContext) throws
        -> (org: OrgRecord, key: APIKeyRecord) {
        let found = try ctx.store.read { txn -> (OrgRecord, APIKeyRecord)? in
            guard key.hasPrefix(APIKeys.prefix), key.utf8.count <= 64,
                  let record = try txn.apiKey(id: String(key.prefix(APIKeys.idLength))),
                  constantTimeEqual(record.hash, SHA256.hash(key.utf8)), record.revokedAt == nil,
                  let org = try txn.org(named: record.org) else { return nil }
            return (org, record)
        }
        guard let (org, record) = found else {
            throw ServiceError(.unauthorized, "Invalid or revoked API key.",
                               hint: "Create one with 'attestctl apikey create --org NAME'.")
        }
        guard use == .heartbeat || record.scope == .all else {
            throw ServiceError(.forbidden, "This API key may only send heartbeats.",
                               hint: "Use a key created with --scope all for the usage and webhook APIs.",
                               log: "API key \(record.id) of scope \(record.scope.name) used for a management API")
        }
        return (org, record)
    }
}
