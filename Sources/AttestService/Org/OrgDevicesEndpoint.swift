import AttestCore
import AttestStore
import FastCGI

/// The organization's devices (the console's Devices page), served by the org pool. Auth:
/// `OrgCaller` (reads: any role; actions: admin). Only devices of the caller organization's
/// apps exist here: any other keyId is 404 `not_found`, as an unknown one.
///
/// ```
/// GET  /api/v1/org/devices?q=TEXT[&app_id=][&limit=50]   ← {"devices": [summary…], "truncated": bool}
/// GET  /api/v1/org/devices/:keyId                         ← detail
/// POST /api/v1/org/devices/:keyId/actions  → {"action": "flag"|"block"|"clear"|"revoke", "reason"}
///                                                         ← detail (after the action)
/// ```
/// Shapes: `OrgDeviceWire`; what `q` matches and what a search costs: `OrgDeviceSearch`. `q`
/// takes `+` literally (a base64 keyId): a space is `%20`. `limit` is 1…200 (default 50).
/// `:keyId` is base64url (base64 without `/` works too). An action does what `attestctl device
/// flag|revoke` does: `flag` (jailbroken), `block` and `clear` are `DeviceFlags.apply` on the
/// device's lineage; `revoke` sets this key's status revoked. `reason` (1…500 characters) is
/// kept in the flag log (flag, block, clear) and the audit log (`device.<action>`, in the same
/// transaction). A block or revoke then ends the device's flag streams on this host
/// (`FlagStream.close` of its lineage's holder channel).
enum OrgDevicesEndpoint {
    static let path = "/api/v1/org/devices"
    static let reasonCharacters = 1...500

    /// What a call needs: admin for an action, read otherwise.
    static func need(_ request: Request) -> OrgNeed {
        request.method == "GET" || request.method == "HEAD" ? .read : .admin
    }

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let parts = request.path.dropFirst(path.count).split(separator: "/", omittingEmptySubsequences: false)
            .dropFirst().map(String.init)
        guard request.path == path || request.path.hasPrefix(path + "/") else { throw OrgRoute.noSuchPath(request) }
        switch parts.count {
        case 0:
            try FeedbackPath.method(request, ["GET"])
            let caller = try OrgCaller.authenticate(request, need(request), ctx)
            return ServiceContext.json(try search(request, caller, ctx))
        case 1:
            try FeedbackPath.method(request, ["GET"])
            let caller = try OrgCaller.authenticate(request, need(request), ctx)
            let keyID = try Self.keyID(parts[0])
            return ServiceContext.json(try detail(keyID, caller, ctx))
        case 2 where parts[1] == "actions":
            try FeedbackPath.method(request, ["POST"])
            let caller = try OrgCaller.authenticate(request, need(request), ctx)
            let keyID = try Self.keyID(parts[0])
            // 404 before the body is judged.
            guard try ctx.store.read({ try device(keyID, org: caller.org.name, in: $0) }) != nil else {
                throw notFound(OrgDeviceWire.keyID(keyID))
            }
            let body = try JSONBody(request)
            guard let name = try body.string("action") else {
                throw ServiceError(.badRequest, "The field action is required.")
            }
            guard let action = OrgDeviceAction(rawValue: name) else {
                throw ServiceError(.badRequest, "The field action must be one of flag, block, clear, revoke.")
            }
            guard let reason = try body.string("reason"), reasonCharacters.contains(reason.count),
                  reason.utf8.count <= DeviceFlags.reasonBytes else {
                throw ServiceError(.badRequest, "The field reason is required: 1 to 500 characters.")
            }
            try OrgWriteLimit.charge(org: caller.org.name, now: ctx.clock.now(), ctx)
            try action.apply(keyID: keyID, reason: reason, caller: caller, ctx)
            return ServiceContext.json(try detail(keyID, caller, ctx))
        default:
            throw notFound(request.path)
        }
    }

    static func notFound(_ what: String) -> ServiceError {
        ServiceError(.notFound, "No such device.", log: "device \(what.prefix(120))")
    }

    /// The 32 bytes of a keyId in the path (404 when it is not one).
    static func keyID(_ text: String) throws -> [UInt8] {
        guard let bytes = Base64.decode(text), bytes.count == 32 else { throw notFound(text) }
        return bytes
    }

    /// The device of `keyID` when its app is one of `org`'s, else nil.
    static func device(_ keyID: [UInt8], org: String, in txn: Transaction) throws -> (DeviceRecord, AppRecord)? {
        guard let d = try txn.device(keyID: keyID), let app = try txn.app(id: d.appID), app.org == org else {
            return nil
        }
        return (d, app)
    }

    static func search(_ request: Request, _ caller: OrgCaller, _ ctx: ServiceContext) throws -> JSONValue {
        let q = try FlagsAdminEndpoint.query(request, "q", plusIsLiteral: true)
        if let q, q.count > 200 { throw ServiceError(.badRequest, "The query q is at most 200 characters.") }
        let appID = try FlagsAdminEndpoint.query(request, "app_id")
        var limit = 50
        if let text = try FlagsAdminEndpoint.query(request, "limit") {
            guard let n = Int(text), (1...200).contains(n) else {
                throw ServiceError(.badRequest, "The query limit must be a whole number in 1...200.")
            }
            limit = n
        }
        let org = caller.org.name
        return try ctx.store.read { txn in
            var apps = Set(try txn.apps().filter { $0.org == org }.map(\.appID))
            if let appID {
                guard apps.contains(appID) else {
                    throw ServiceError(.notFound, "No such app.", log: "app_id \(appID.prefix(120))")
                }
                apps = [appID]
            }
            var search = OrgDeviceSearch(apps: apps, limit: limit)
            try search.run(q.flatMap { $0.isEmpty ? nil : $0 }, org: org, in: txn)
            let found = search.found.map { JSONValue.object(OrgDeviceWire.summary($0, tier: caller.org.tier)) }
            return .object([("devices", .array(found)),
                            ("truncated", .bool(search.truncated))])
        }
    }

    static func detail(_ keyID: [UInt8], _ caller: OrgCaller, _ ctx: ServiceContext) throws -> JSONValue {
        let now = ctx.clock.now()
        return try ctx.store.read { txn in
            guard let (d, app) = try device(keyID, org: caller.org.name, in: txn) else {
                throw notFound(OrgDeviceWire.keyID(keyID))
            }
            let tier = caller.org.tier
            let rules = CustomClaims.allowed((try? CustomClaims.parse(app.customClaimsJSON)) ?? [], tier: tier)
            let assessment = try DeviceAssessment(device: d, app: app, rules: rules, org: caller.org.name, in: txn,
                                                  now: now)
            let changes = try txn.flagChanges(.of(d))
            let revocation = d.status == .revoked ? try txn.revocation(keyID: keyID) : nil
            let standing = OrgDeviceStanding(device: d, app: app, lineage: assessment.lineage, changes: changes,
                                             revocation: revocation, now: now)
            return OrgDeviceWire.detail(d, tier: caller.org.tier, standing: standing, assessment: assessment,
                                        changes: changes, now: now)
        }
    }
}
