import AttestCore
import AttestStore
import FastCGI

/// The org API for feature flags, environments and release notes (docs/flags.md, "API"):
/// `Authorization: Bearer aat_…` of scope `all` (401 without a valid key, 403 for a
/// `heartbeat` key). `app_id` (query, or the body of a create) names one of the key's
/// organization's apps; another organization's app is 404 `not_found`, as one that does not
/// exist. Every write goes through `FeatureFlagAdmin` (the CLI's checks and limits: 403
/// `forbidden` naming the limit) and is published to this host's flag stream after it commits.
///
/// ```
/// GET    /api/v1/org/flags?app_id=                 ← {"flags": [flag…]}
/// POST   /api/v1/org/flags                         → {app_id, key, type, value, environment?, description?}
///                                                  ← 201 flag
/// GET    /api/v1/org/flags/:key?app_id=            ← flag
/// PUT    /api/v1/org/flags/:key?app_id=            → {value, environment?} ← flag
/// DELETE /api/v1/org/flags/:key?app_id=            ← {"key", "deleted": true}
/// POST   /api/v1/org/flags/:key/rules?app_id=      → {name?, conditions: [{attribute, operator, value}], value,
///                                                     rollout_percentage?, is_active?, environment?} ← 201 flag
/// DELETE /api/v1/org/flags/:key/rules/:n?app_id=   ← flag (n: 1-based)
/// PUT    /api/v1/org/flags/:key/rollout?app_id=    → {environment?, percentage, value} ← flag
/// GET    /api/v1/org/flags/:key/overrides?app_id=  ← {"overrides": [override…]}
/// POST   /api/v1/org/flags/:key/overrides?app_id=  → {device_key_id | device_id | sdk_device_id, forced_value,
///                                                     expires_at?, note?} ← 201 override
/// DELETE /api/v1/org/flags/:key/overrides?app_id=&device_key_id= | &device_id= | &sdk_device_id=
///                                                  ← {"deleted": true}   (query members %-decoded, `query`)
/// GET    /api/v1/org/flag-environments?app_id=     ← {"environments": [{name, created_at}]}
/// POST   /api/v1/org/flag-environments             → {app_id, name} ← 201 {name, created_at}
/// DELETE /api/v1/org/flag-environments/:name?app_id= ← {"name", "deleted": true}
/// GET    /api/v1/org/release-notes?app_id=         ← {"release_notes": [note…]}
/// POST   /api/v1/org/release-notes                 → {app_id, version, title, body, publish_at?} ← 201 note
/// DELETE /api/v1/org/release-notes/:id?app_id=     ← {"id", "deleted": true}
///
/// flag = {key, type, description, values: {env: value}, rollouts: [{environment, percentage, value}],
///         rules: [{index, name, environment (null: all), is_active, rollout_percentage, value,
///                  conditions: [{attribute, operator, value}]}], created_at, updated_at}
/// override = {subject: "device:ID" | "sdk:ID", flag_key, value, expires_at (or null), created_at, note}
/// ```
public enum FlagsAdminEndpoint {
    public static let flagsPath = "/api/v1/org/flags"
    public static let environmentsPath = "/api/v1/org/flag-environments"
    public static let notesPath = "/api/v1/org/release-notes"

    public static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let caller = try OrgCaller.authenticate(request, OrgNeed.of(request.method, write: .edit), ctx)
        let org = caller.org.name
        let now = ctx.clock.now()
        let body = request.method == "POST" || request.method == "PUT" ? try JSONBody(request) : nil
        guard let appID = try query(request, "app_id") ?? body?.string("app_id") else {
            throw ServiceError(.badRequest, "app_id is required (the query's app_id, or the body's for a create).")
        }
        // 404 for an app the organization does not have, before any write or charge.
        let (app, owner) = try ctx.store.read { txn in try FeatureFlagAdmin.app(appID, org: org, in: txn) }
        if request.method != "GET" { try chargeWrite(org: org, now: now, ctx) }
        /// Makes the change and records it in the audit log, in one transaction.
        func change<T>(_ action: String, _ target: String, _ detail: String = "",
                       _ body: (FeatureFlagAdmin, Transaction) throws -> (T, [FeatureFlagChange])) throws -> T {
            let (result, changes) = try FeatureFlagAdmin.write(
                store: ctx.store, appID: appID, org: org, actor: .api, now: now, random: ctx.random,
                queueEvents: ctx.configuration.webhookQueueEvents) { a, t in
                    let done = try body(a, t)
                    try OrgAudit.record(caller, action: action, target: target,
                                        detail: "app \(appID)" + (detail.isEmpty ? "" : ": " + detail), at: now, in: t)
                    return done
                }
            // In process (tests) there is no socket directory and no nginx to publish to.
            if let sockets = ctx.poolSockets, !changes.isEmpty {
                for warning in FlagStream.publish(changes, socketDirectory: sockets, store: ctx.store) {
                    ctx.log("org flags API: \(warning)")
                }
            }
            return result
        }
        func flagJSON(_ k: String) throws -> JSONValue {
            try ctx.store.read { txn in
                json(try FeatureFlagAdmin(app: app, tier: owner.tier, actor: .api, now: now, random: ctx.random)
                    .flag(k, in: txn))
            }
        }
        let parts: [String]
        let resource: String
        if let rest = suffix(request.path, flagsPath) {
            (resource, parts) = ("flags", rest)
        } else if let rest = suffix(request.path, environmentsPath) {
            (resource, parts) = ("environments", rest)
        } else if let rest = suffix(request.path, notesPath) {
            (resource, parts) = ("notes", rest)
        } else {
            throw ServiceError(.notFound, "No such resource: \(request.path).")
        }
        switch (resource, request.method, parts.count, parts.count > 1 ? parts[1] : "") {
        case ("flags", "GET", 0, _):
            let flags = try ctx.store.read { try $0.featureFlags(appID: appID) }
            return ServiceContext.json(["flags": .array(flags.map(json))])
        case ("flags", "POST", 0, _):
            let b = body!
            guard let key = try b.string("key"), let typeName = try b.string("type"), let value = b.json("value") else {
                throw ServiceError(.badRequest, "key, type and value are required.")
            }
            guard let type = FeatureFlagType(rawValue: typeName) else {
                throw ServiceError(.badRequest, "type is one of bool, int, double, string, json.")
            }
            try change("flag.create", key, "\(typeName) \(value.jsonText)") { a, t in
                ((), try a.addFlag(key: key, type: type, value: value.jsonText,
                                   environment: try b.string("environment"),
                                   description: try b.string("description") ?? "", in: t))
            }
            return created(try flagJSON(key))
        case ("flags", "GET", 1, _):
            return ServiceContext.json(try flagJSON(parts[0]))
        case ("flags", "PUT", 1, _):
            guard let value = body!.json("value") else { throw ServiceError(.badRequest, "value is required.") }
            let env = try body!.string("environment")
            try change("flag.set", parts[0], "\(env ?? "default environment") = \(value.jsonText)") { a, t in
                ((), try a.setValue(key: parts[0], value: value.jsonText, environment: env, in: t))
            }
            return ServiceContext.json(try flagJSON(parts[0]))
        case ("flags", "DELETE", 1, _):
            try change("flag.remove", parts[0]) { a, t in ((), try a.removeFlag(key: parts[0], in: t)) }
            return ServiceContext.json(["key": .string(parts[0]), "deleted": true])
        case ("flags", "POST", 2, "rules"):
            let b = body!
            guard let value = b.json("value"), let items = b.json("conditions")?.arrayValue else {
                throw ServiceError(.badRequest, "value and conditions (an array) are required.")
            }
            var conditions = [FeatureFlagCondition]()
            for item in items.prefix(64) { conditions.append(try FeatureFlagConditions.parse(json: item)) }
            if items.count > 64 { throw ServiceError(.badRequest, "too many conditions") }
            let rollout = try b.json("rollout_percentage").map { (v: JSONValue) throws -> UInt8 in
                guard let n = v.intValue, (0...100).contains(n) else {
                    throw ServiceError(.badRequest, "rollout_percentage is a whole number 0 to 100.")
                }
                return UInt8(n)
            } ?? 100
            let rule = FeatureFlagRule(name: try b.string("name") ?? "", environment: try b.string("environment") ?? "",
                                       active: try b.bool("is_active") ?? true, rollout: rollout,
                                       valueJSON: value.jsonText, conditions: conditions)
            try change("flag.rule_add", parts[0], "\(rule.name) → \(value.jsonText)") { a, t in
                ((), try a.addRule(key: parts[0], rule: rule, at: nil, in: t))
            }
            return created(try flagJSON(parts[0]))
        case ("flags", "DELETE", 3, "rules"):
            guard let n = Int(parts[2]) else { throw ServiceError(.notFound, "No rule \(parts[2].prefix(20)).") }
            try change("flag.rule_remove", parts[0], "rule \(n)") { a, t in
                ((), try a.removeRule(key: parts[0], index: n, in: t))
            }
            return ServiceContext.json(try flagJSON(parts[0]))
        case ("flags", "PUT", 2, "rollout"):
            let b = body!
            guard let percent = b.json("percentage")?.intValue, (0...100).contains(percent) else {
                throw ServiceError(.badRequest, "percentage is a whole number 0 to 100 (0 removes the rollout).")
            }
            let env = try b.string("environment")
            try change("flag.rollout", parts[0], "\(env ?? "default environment") \(percent)%") { a, t in
                ((), try a.setRollout(key: parts[0], environment: env, percent: Int(percent),
                                      value: b.json("value")?.jsonText, in: t))
            }
            return ServiceContext.json(try flagJSON(parts[0]))
        case ("flags", "GET", 2, "overrides"):
            _ = try flagJSON(parts[0])
            let all = try ctx.store.read { try $0.featureFlagOverrides(appID: appID) }.filter { $0.flagKey == parts[0] }
            return ServiceContext.json(["overrides": .array(all.map(json))])
        case ("flags", "POST", 2, "overrides"):
            let b = body!
            let subject = try subject(try b.string("device_key_id"), try b.string("device_id"),
                                      try b.string("sdk_device_id"), appID: appID, ctx)
            guard let value = b.json("forced_value") else {
                throw ServiceError(.badRequest, "forced_value is required.")
            }
            let expires = try b.string("expires_at").map { (s: String) throws -> Timestamp in
                guard let t = Timestamp(iso8601: s) else {
                    throw ServiceError(.badRequest, "expires_at is an ISO 8601 date such as 2026-03-10T12:00:00Z.")
                }
                return t
            }
            let record = try change("flag.override_set", parts[0], "\(subject) = \(value.jsonText)") { a, t in
                try a.setOverride(key: parts[0], subject: subject, value: value.jsonText, expiresAt: expires,
                                  note: try b.string("note") ?? "", in: t)
            }
            return created(json(record))
        case ("flags", "DELETE", 2, "overrides"):
            let subject = try subject(try query(request, "device_key_id"), try query(request, "device_id"),
                                      try query(request, "sdk_device_id"), appID: appID, ctx)
            try change("flag.override_remove", parts[0], "\(subject)") { a, t in
                ((), try a.removeOverride(key: parts[0], subject: subject, in: t))
            }
            return ServiceContext.json(["deleted": true])
        case ("environments", "GET", 0, _):
            let envs = try ctx.store.read { txn in
                try FeatureFlagAdmin(app: app, tier: owner.tier, actor: .api, now: now, random: ctx.random)
                    .state(in: txn).environments
            }
            return ServiceContext.json(["environments": .array(envs.map(json))])
        case ("environments", "POST", 0, _):
            guard let name = try body!.string("name") else { throw ServiceError(.badRequest, "name is required.") }
            try change("flag_environment.create", name) { a, t in ((), try a.addEnvironment(name, in: t)) }
            return created(json(FeatureFlagEnvironment(name: name, createdAt: now)))
        case ("environments", "DELETE", 1, _):
            try change("flag_environment.remove", parts[0]) { a, t in ((), try a.removeEnvironment(parts[0], in: t)) }
            return ServiceContext.json(["name": .string(parts[0]), "deleted": true])
        case ("notes", "GET", 0, _):
            let notes = try ctx.store.read { try $0.releaseNotes(appID: appID) }
            return ServiceContext.json(["release_notes": .array(notes.map { ReleaseNotes.json($0, now: now) })])
        case ("notes", "POST", 0, _):
            let b = body!
            guard let version = try b.string("version"), let title = try b.string("title") else {
                throw ServiceError(.badRequest, "version and title are required.")
            }
            let at = try b.string("publish_at").map { (s: String) throws -> Timestamp in
                guard let t = Timestamp(iso8601: s) else {
                    throw ServiceError(.badRequest, "publish_at is an ISO 8601 date such as 2026-03-10T12:00:00Z.")
                }
                return t
            }
            let note = try change("release_note.create", version, title) { a, t in
                (try a.addNote(version: version, title: title, body: try b.string("body") ?? "", publishAt: at, in: t),
                 [FeatureFlagChange]())
            }
            return created(ReleaseNotes.json(note, now: now))
        case ("notes", "DELETE", 1, _):
            guard let id = ReleaseNotes.parseID(parts[0]) else {
                throw ServiceError(.notFound, "No release note \(parts[0].prefix(40)).")
            }
            try change("release_note.remove", ReleaseNotes.idText(id)) { a, t in
                try a.removeNote(id: id, in: t)
                return ((), [FeatureFlagChange]())
            }
            return ServiceContext.json(["id": .string(ReleaseNotes.idText(id)), "deleted": true])
        case ("flags", _, 0...1, _), ("environments", _, 0...1, _), ("notes", _, 0...1, _),
             ("flags", _, 2, "rules"), ("flags", _, 3, "rules"), ("flags", _, 2, "rollout"),
             ("flags", _, 2, "overrides"):
            throw ServiceError(.methodNotAllowed, "\(request.method) is not allowed on \(request.path).")
        default:
            throw ServiceError(.notFound, "No such resource: \(request.path).")
        }
    }

    /// A flag as the API and `attestctl flags show --json` show it.
    public static func json(_ f: FeatureFlagRecord) -> JSONValue {
        func value(_ text: String) -> JSONValue { (try? JSONParser.parse(text)) ?? .null }
        return .object([
            ("key", .string(f.key)), ("type", .string(f.type.rawValue)), ("description", .string(f.description)),
            ("values", .object(f.defaults.map { ($0.environment, value($0.valueJSON)) })),
            ("rollouts", .array(f.rollouts.map {
                .object([("environment", .string($0.environment)), ("percentage", .int(Int64($0.percent))),
                         ("value", value($0.valueJSON))])
            })),
            ("rules", .array(f.rules.enumerated().map { i, r in
                .object([("index", .int(Int64(i + 1))), ("name", .string(r.name)),
                         ("environment", r.environment.isEmpty ? .null : .string(r.environment)),
                         ("is_active", .bool(r.active)), ("rollout_percentage", .int(Int64(r.rollout))),
                         ("value", value(r.valueJSON)),
                         ("conditions", .array(r.conditions.map(FeatureFlagConditions.json)))])
            })),
            ("created_at", .string(f.createdAt.iso8601)), ("updated_at", .string(f.updatedAt.iso8601)),
        ])
    }

    public static func json(_ o: FeatureFlagOverrideRecord) -> JSONValue {
        .object([("subject", .string(FeatureFlagAdmin.text(o.subject))), ("flag_key", .string(o.flagKey)),
                 ("value", (try? JSONParser.parse(o.valueJSON)) ?? .null),
                 ("expires_at", o.expiresAt.map { .string($0.iso8601) } ?? .null),
                 ("created_at", .string(o.createdAt.iso8601)), ("note", .string(o.note))])
    }

    public static func json(_ e: FeatureFlagEnvironment) -> JSONValue {
        .object([("name", .string(e.name)), ("created_at", .string(e.createdAt.iso8601))])
    }

    /// Charges one write to the organization's bucket (`flags.writesPerOrganizationPerMinute`,
    /// ephemeral `rates` entry `window end ‖ "flag-write-org:" ‖ organization`): each write is a
    /// durable write waiting on a sync. - Throws: 429 `rate_limited` with `Retry-After`.
    private static func chargeWrite(org: String, now: Timestamp, _ ctx: ServiceContext) throws {
        try OrgWriteLimit.charge("flag-write-org:", limit: ctx.configuration.flagWritesPerOrganizationPerMinute,
                                 org: org, what: "changes to one organization's feature flags",
                                 key: "flags.writesPerOrganizationPerMinute", now: now, ctx)
    }

    private static func created(_ value: JSONValue) -> Response {
        .json(201, value.jsonText, headers: [Header("Cache-Control", "no-store")])
    }

    /// The path's segments after `prefix`, or nil when it is not under it.
    private static func suffix(_ path: String, _ prefix: String) -> [String]? {
        guard path == prefix || path.hasPrefix(prefix + "/") else { return nil }
        return path.dropFirst(prefix.count).split(separator: "/").map(String.init)
    }

    /// A query member given at most once, %-decoded strictly (RFC 3986): `%XX` is a byte, the
    /// bytes must be UTF-8; a bare `+` is refused because forms read it as a space and URLs as a
    /// plus (send `%2B` for a plus, `%20` for a space). So an override's subject set through the
    /// body ("qa+1", a base64 keyId with `+` and `/`) can be named in DELETE's query.
    /// `plusIsLiteral`: a `+` is a plus, as Foundation's URLComponents writes one (the SDK's
    /// queries, which encode a space as `%20`).
    /// - Throws: `bad_request` for a repeat, a bare `+`, a malformed escape or bytes not UTF-8.
    static func query(_ request: Request, _ name: String, plusIsLiteral: Bool = false) throws -> String? {
        var found: String?
        for pair in request.query.split(separator: "&") where pair.hasPrefix(name + "=") {
            guard found == nil else { throw ServiceError(.badRequest, "\(name) appears more than once.") }
            found = try percentDecoded(pair.utf8.dropFirst(name.utf8.count + 1), name, plusIsLiteral: plusIsLiteral)
        }
        return found
    }

    /// `text` with its `%XX` escapes decoded. - Throws: `bad_request` naming `name`.
    static func percentDecoded(_ text: some Sequence<UInt8>, _ name: String,
                               plusIsLiteral: Bool = false) throws -> String {
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        let raw = [UInt8](text)
        var bytes = [UInt8]()
        bytes.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            switch raw[i] {
            case UInt8(ascii: "+") where !plusIsLiteral:
                throw ServiceError(.badRequest, "\(name): a bare + is ambiguous; send %2B for a plus, %20 for a space.")
            case UInt8(ascii: "%"):
                guard i + 2 < raw.count, let high = hex(raw[i + 1]), let low = hex(raw[i + 2]) else {
                    throw ServiceError(.badRequest, "\(name) has a malformed %-escape (each % takes two hex digits).")
                }
                bytes.append(high << 4 | low)
                i += 3
            case let c:
                bytes.append(c)
                i += 1
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw ServiceError(.badRequest, "\(name) is not UTF-8 once %-decoded.")
        }
        return decoded
    }

    /// An override's subject: a device of THIS app (by keyId in base64, or deviceId) or an SDK
    /// id. A keyId of another app's device (of any organization) reads exactly as an unknown
    /// one, and no answer names a device the caller did not name.
    private static func subject(_ keyID: String?, _ deviceID: String?, _ sdk: String?, appID: String,
                                _ ctx: ServiceContext) throws -> FeatureFlagOverrideSubject {
        switch (keyID, deviceID, sdk) {
        case (let k?, nil, nil):
            guard let bytes = Base64.decode(k), bytes.count == 32,
                  let device = try ctx.store.read({ try $0.device(keyID: bytes) }), device.appID == appID else {
                throw ServiceError(.notFound, "No device of \(appID) with that device_key_id.")
            }
            return .device(device.deviceID)
        case (nil, let d?, nil): return .device(d)
        case (nil, nil, let s?): return .sdk(s)
        default:
            throw ServiceError(.badRequest, "Give exactly one of device_key_id, device_id, sdk_device_id.")
        }
    }
}

extension JSONBody {
    /// The member `name` as given (nil when absent or null).
    func json(_ name: String) -> JSONValue? {
        guard let v = members.first(where: { $0.0 == name })?.1, !v.isNull else { return nil }
        return v
    }
}
