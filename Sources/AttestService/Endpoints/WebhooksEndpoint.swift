import AttestCore
import AttestStore
import FastCGI

/// The webhook management API (docs/contract.md §7), `Authorization: Bearer aat_…` (an organization API key;
/// 401 `unauthorized` otherwise). Only the key's organization's endpoints exist for it: any
/// other id is 404 `not_found`.
///
/// ```
/// GET    /api/v1/org/webhooks                 ← 200 {"webhooks": [endpoint…]}, newest first
/// POST   /api/v1/org/webhooks                 → {"url", "events"?: [name…] ([] or absent: all), "description"?}
///                                             ← 201 endpoint + "secret": "whsec_…" (shown only here)
/// GET    /api/v1/org/webhooks/:id             ← 200 endpoint
/// PATCH  /api/v1/org/webhooks/:id             → any of {"url", "events", "description", "isActive"} ← 200 endpoint
/// DELETE /api/v1/org/webhooks/:id             ← 200 {"id", "deleted": true}
/// POST   /api/v1/org/webhooks/:id/test        ← 202 {"queued": "evt_…", "event": "webhook.test"}
/// GET    /api/v1/org/webhooks/:id/deliveries[?limit=N]  ← 200 {"deliveries": [delivery…]}, newest first
///
/// endpoint = {"id", "url", "events", "description", "isActive", "createdAt", "updatedAt"}
/// delivery = {"id", "eventId", "event", "createdAt", "status": pending|delivered|failed|skipped,
///             "nextRetryAt" (date or null), "attempts": [{"at", "status" (HTTP status or null),
///             "durationMs", "response" (≤ 256 bytes of the body), "error" (or null)}]}
/// ```
/// A bad member is 400 `bad_request` naming it (`url` also for the SSRF guard's refusals).
/// What one organization keeps is bounded: past `webhooks.endpointsPerOrganization` a POST is
/// 429 `store_quota_exceeded`; a test is 429 `rate_limited` (with `Retry-After`) past
/// `webhooks.testEventsPerEndpointPerMinute` or `webhooks.testEventsPerOrganizationPerMinute`,
/// and 429 `store_quota_exceeded` once the organization stores
/// `webhooks.storedDeliveriesPerOrganization` deliveries and test events (`WebhookCountRecord`).
public enum WebhooksEndpoint {
    public static let path = "/api/v1/org/webhooks"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        // Reads too: an endpoint URL may carry a secret (Slack-style hook URLs), deliveries the replies.
        let caller = try OrgCaller.authenticate(request, .admin, ctx)
        let org = caller.org.name
        var admin = WebhookAdmin(store: ctx.store, allowPrivate: ctx.configuration.webhookAllowPrivateDestinations,
                                 random: ctx.random, now: ctx.clock.now())
        admin.quotas = .init(ctx.configuration)
        let now = admin.now
        /// WebhookAdmin commits its own change: the audit entry follows in the next transaction.
        func audit(_ action: String, _ target: String, _ detail: String = "") throws {
            try ctx.store.write { txn in
                try OrgAudit.record(caller, action: action, target: target, detail: detail, at: now, in: txn)
            }
        }
        let rest = request.path.hasPrefix(path) ? request.path.dropFirst(path.count) : ""
        let parts = rest.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (request.method, parts.count, parts.last) {
        case ("GET", 0, _):
            return ServiceContext.json(["webhooks": .array(try admin.list(org: org).map { json($0) })])
        case ("POST", 0, _):
            let body = try JSONBody(request)
            guard let url = try body.string("url") else {
                throw ServiceError(.badRequest, "The field url is required.")
            }
            try WebhookAPILimits.chargeWrite(org: org, now: admin.now, ctx)
            let record = try admin.create(org: org, url: url, events: try body.strings("events"),
                                          description: try body.string("description"))
            try audit("webhook.create", record.id, url)
            return .json(201, json(record, secret: true).jsonText, headers: [Header("Cache-Control", "no-store")])
        case ("GET", 1, _):
            return ServiceContext.json(json(try admin.get(org: org, id: parts[0])))
        case ("PATCH", 1, _):
            let body = try JSONBody(request)
            try WebhookAPILimits.chargeWrite(org: org, now: admin.now, ctx)
            let record = try admin.update(org: org, id: parts[0], url: try body.string("url"),
                                          events: try body.strings("events"),
                                          description: try body.string("description"),
                                          isActive: try body.bool("isActive"))
            try audit("webhook.update", record.id, record.url + (record.isActive ? "" : " (paused)"))
            return ServiceContext.json(json(record))
        case ("DELETE", 1, _):
            try WebhookAPILimits.chargeWrite(org: org, now: admin.now, ctx)
            try admin.remove(org: org, id: parts[0])
            try audit("webhook.remove", parts[0])
            return ServiceContext.json(["id": .string(parts[0]), "deleted": true])
        case ("POST", 2, "test"):
            _ = try admin.get(org: org, id: parts[0])  // 404 before any bucket is charged
            try WebhookAPILimits.chargeTestEvent(org: org, endpoint: parts[0], now: admin.now, ctx)
            let id = try admin.test(org: org, id: parts[0])
            try audit("webhook.test", parts[0], id)
            return .json(202,
                         JSONValue.object([("queued", .string(id)),
                                           ("event", .string(WebhookEvent.test.rawValue))]).jsonText,
                         headers: [Header("Cache-Control", "no-store")])
        case ("GET", 2, "deliveries"):
            var limit = 100
            for pair in request.query.split(separator: "&") where pair.hasPrefix("limit=") {
                guard let n = Int(pair.dropFirst(6)), (1...1000).contains(n) else {
                    throw ServiceError(.badRequest, "limit must be a whole number in 1...1000.")
                }
                limit = n
            }
            return ServiceContext.json([
                "deliveries": .array(try admin.deliveries(org: org, id: parts[0], limit: limit).map(json))
            ])
        case (_, 0...1, _), (_, 2, "test"), (_, 2, "deliveries"):
            throw ServiceError(.methodNotAllowed, "\(request.method) is not allowed on \(request.path).")
        default:
            throw ServiceError(.notFound, "No such webhook resource: \(request.path).")
        }
    }

    /// An endpoint as the API shows it; `secret` only in the answer to its creation.
    public static func json(_ r: WebhookEndpointRecord, secret: Bool = false) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(r.id)), ("url", .string(r.url)), ("events", .array(r.events.map { .string($0) })),
            ("description", .string(r.description)), ("isActive", .bool(r.isActive)),
            ("createdAt", .string(r.createdAt.iso8601)), ("updatedAt", .string(r.updatedAt.iso8601)),
        ]
        if secret { members.append(("secret", .string(r.secret))) }
        return .object(members)
    }

    public static func json(_ d: DeliveryRecord) -> JSONValue {
        .object([
            ("id", .string("dlv_\(d.sequence)")), ("eventId", .string(d.eventID)), ("event", .string(d.event)),
            ("createdAt", .string(d.createdAt.iso8601)), ("status", .string(d.state.name)),
            ("nextRetryAt", d.state == .pending ? d.nextAttemptAt.map { .string($0.iso8601) } ?? .null : .null),
            ("attempts", .array(d.attempts.map { a in
                .object([("at", .string(a.at.iso8601)), ("status", a.status == 0 ? .null : .int(Int64(a.status))),
                         ("durationMs", .int(Int64(a.durationMs))), ("response", .string(a.excerpt)),
                         ("error", a.error.isEmpty ? .null : .string(a.error))])
            })),
        ])
    }
}

/// A JSON object request body with typed, optional members; a member of the wrong type is a
/// 400 naming it.
struct JSONBody {
    let members: [(String, JSONValue)]

    init(_ request: Request) throws {
        guard !request.bodyTooLarge else { throw ServiceError(.payloadTooLarge, "The request body is too large.") }
        let value: JSONValue
        do { value = try JSONParser.parse(request.body, limits: .init()) } catch {
            throw ServiceError(.badRequest, "The request body must be a JSON object.", log: error.reason)
        }
        guard let members = value.objectValue, members.count <= 16 else {
            throw ServiceError(.badRequest, "The request body must be a JSON object of at most 16 members.")
        }
        for (i, m) in members.enumerated() where members[..<i].contains(where: { $0.0 == m.0 }) {
            throw ServiceError(.badRequest, "The field \(m.0) appears more than once.")
        }
        self.members = members
    }

    private func value(_ name: String) -> JSONValue? {
        guard let v = members.first(where: { $0.0 == name })?.1, !v.isNull else { return nil }
        return v
    }

    func string(_ name: String) throws -> String? {
        guard let v = value(name) else { return nil }
        guard let s = v.stringValue else { throw ServiceError(.badRequest, "The field \(name) must be a string.") }
        return s
    }

    func strings(_ name: String) throws -> [String]? {
        guard let v = value(name) else { return nil }
        guard let items = v.arrayValue, items.count <= 32, items.allSatisfy({ $0.stringValue != nil }) else {
            throw ServiceError(.badRequest, "The field \(name) must be an array of at most 32 strings.")
        }
        return items.map { $0.stringValue! }
    }

    func bool(_ name: String) throws -> Bool? {
        guard let v = value(name) else { return nil }
        guard let b = v.boolValue else { throw ServiceError(.badRequest, "The field \(name) must be true or false.") }
        return b
    }
}
