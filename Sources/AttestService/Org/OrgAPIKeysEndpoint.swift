import AttestCore
import AttestStore
import FastCGI

/// The organization's API keys (the console's API keys page), served by the org pool; every
/// call needs the admin role (`OrgCaller`). Another organization's key id is 404, as an
/// unknown one.
///
/// ```
/// GET    /api/v1/org/api-keys                       ← {"api_keys": [key…]} in id order
/// POST   /api/v1/org/api-keys → {"name", "scope"?}  ← 201 key + {"key": "aat_…"} (shown only here;
///                                                     Cache-Control: no-store)
/// DELETE /api/v1/org/api-keys/:id                   ← {"id", "revoked": true}
///
/// key = {"id" (the key's first 12 characters), "name", "scope" ("all"|"heartbeat"),
///        "created_at", "revoked_at" (or null)}
/// ```
/// As `attestctl apikey create|revoke`: only the key's SHA-256 is stored; `name` is 1…100
/// characters, `scope` `all` (the default: the org API as admin) or `heartbeat` (heartbeats
/// only); a revoked key answers 401 at once and its flag streams on this host end
/// (`FlagStream.close` of its holder channel). Revoking a revoked key is 409 `conflict`.
/// Audit: `apikey.create`, `apikey.revoke` (target the id), in the write's transaction.
enum OrgAPIKeysEndpoint {
    static let path = "/api/v1/org/api-keys"

    /// What a call needs: admin, reads included (a key list is the admin's).
    static func need(_ request: Request) -> OrgNeed { .admin }

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let rest = request.path.dropFirst(path.count)
        let caller = try OrgCaller.authenticate(request, need(request), ctx)
        let org = caller.org.name
        let now = ctx.clock.now()
        if rest.isEmpty {
            try FeedbackPath.method(request, ["GET", "POST"])
            if request.method == "GET" {
                let keys = try ctx.store.read { try $0.apiKeys() }.filter { $0.org == org }
                return ServiceContext.json(["api_keys": .array(keys.map(json))])
            }
            let body = try JSONBody(request)
            guard let name = try body.string("name"), (1...100).contains(name.count),
                  !name.unicodeScalars.contains(where: AuditText.isUnsafe) else {
                throw ServiceError(.badRequest, "The field name is required: 1 to 100 characters, none of them "
                                   + "control or direction-changing characters.")
            }
            let scopeName = try body.string("scope") ?? APIKeyRecord.Scope.all.name
            guard let scope = APIKeyRecord.Scope(name: scopeName) else {
                throw ServiceError(.badRequest, "The field scope must be all or heartbeat.")
            }
            try OrgWriteLimit.charge(org: org, now: now, ctx)
            let bound = ctx.configuration.orgAPIKeysPerOrganization
            let (key, record) = try ctx.store.write([.durable]) { txn -> (String, APIKeyRecord) in
                let own = try txn.apiKeys().filter { $0.org == org }
                if own.filter({ $0.revokedAt == nil }).count >= bound || own.count >= bound * 10 {
                    throw ServiceError(.storeQuotaExceeded,
                                       "This organization holds \(own.count) API keys; at most \(bound) active "
                                       + "(and \(bound * 10) with revoked ones) may be made here.",
                                       hint: "Revoke keys no longer used; the operator sets the bound with "
                                             + "org.apiKeysPerOrganization.")
                }
                while true {
                    let made = APIKeys.generate(org: org, name: name, scope: scope, random: ctx.random, now: now)
                    // ids are 48 random bits: a clash is retried
                    guard try txn.apiKey(id: made.record.id) == nil else { continue }
                    try txn.put(made.record)
                    try OrgAudit.record(caller, action: "apikey.create", target: made.record.id,
                                        detail: "\(scope.name): \(name)", at: now, in: txn)
                    return made
                }
            }
            guard case .object(let members) = json(record) else { fatalError("a key is an object") }
            return .json(201, JSONValue.object(members + [("key", .string(key))]).jsonText,
                         headers: [Header("Cache-Control", "no-store")])
        }
        let id = String(rest.dropFirst())
        guard rest.hasPrefix("/"), id.count == APIKeys.idLength, !id.contains("/") else {
            throw ServiceError(.notFound, "No such API key.", log: "path \(request.path.prefix(120))")
        }
        try FeedbackPath.method(request, ["DELETE"])
        try OrgWriteLimit.charge(org: org, now: now, ctx)
        try ctx.store.write([.durable]) { txn in
            guard var key = try txn.apiKey(id: id), key.org == org else {
                throw ServiceError(.notFound, "No such API key.", log: "api key \(id)")
            }
            guard key.revokedAt == nil else { throw ServiceError(.conflict, "The API key \(id) is already revoked.") }
            key.revokedAt = now
            try txn.put(key)
            try OrgAudit.record(caller, action: "apikey.revoke", target: id, at: now, in: txn)
        }
        if let sockets = ctx.poolSockets {
            for warning in FlagStream.close(holders: [FlagChannel.holder(apiKeyID: id)], socketDirectory: sockets) {
                ctx.log("org API keys API: \(warning)")
            }
        }
        return ServiceContext.json(["id": .string(id), "revoked": true])
    }

    static func json(_ k: APIKeyRecord) -> JSONValue {
        .object([("id", .string(k.id)), ("name", .string(k.name)), ("scope", .string(k.scope.name)),
                 ("created_at", .string(k.createdAt.iso8601)),
                 ("revoked_at", k.revokedAt.map { .string($0.iso8601) } ?? .null)])
    }
}
