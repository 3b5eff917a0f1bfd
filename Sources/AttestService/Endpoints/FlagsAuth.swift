import AttestCore
import AttestStore
import FastCGI

/// Who calls the flags pool's device endpoints (`GET /api/v1/flags`, the stream's auth,
/// What's New), as the SDK sends it (design §1.1):
///
/// ```
/// token:    X-Bundle-ID, X-Team-ID, Authorization: Bearer <token from validate/refresh>
/// API key:  Authorization: Bearer aat_…  [X-Bundle-ID, X-Team-ID]  [X-Device-ID]
/// ```
/// Statuses (the SDK renews its token once on a 401, and its stream reconnects after every
/// one): 401 `unauthorized` only when a renewal can help (no credential, a token that does not
/// verify, has expired, is for another app, or names a device the app does not have; an
/// unknown or revoked API key); 403 `forbidden` for a device the server refuses (revoked,
/// invalidated, blocked by an operator) and for an API key whose organization does not have
/// the app. The token checks are heartbeat's (`HeartbeatEndpoint.tokenClaims`, `standing`),
/// without its monthly counting. An API key with no app headers (SDK 2.0.0) is served its
/// organization's only app, else 400.
enum FlagsAuth {
    /// How the caller proved itself; its device (for a token) is read in the handler's own
    /// read transaction (`device`), with whatever else the handler reads.
    enum Credential {
        case token(VerifiedTokens.Claims)
        /// `id`: the key's id (`APIKeyRecord.id`), which names its streams' holder channel.
        case apiKey(id: String, sdkDeviceID: String?)
    }

    struct Caller {
        let app: AppContext
        let credential: Credential
    }

    /// The caller of `request` (401/403/400 as above).
    static func caller(_ request: Request, now: Timestamp, _ ctx: ServiceContext) throws -> Caller {
        guard let credential = APIKeys.bearer(request) else {
            throw HeartbeatEndpoint.unauthorized("no Authorization: Bearer credential")
        }
        if credential.hasPrefix(APIKeys.prefix) {
            let org = try APIKeys.organization(apiKey: credential, for: .heartbeat, ctx)
            let sdkDeviceID = FeatureFlagTargeting(params: request.params).sdkDeviceID
            return Caller(app: try app(forAPIKeyOf: org, request, ctx), credential: .apiKey(id: String(credential.prefix(APIKeys.idLength)), sdkDeviceID: sdkDeviceID))
        }
        let app = try AppLookup.app(for: request, ctx)!
        return Caller(app: app, credential: .token(try HeartbeatEndpoint.tokenClaims(credential, app: app.app,
                                                                                      now: now, ctx)))
    }

    /// The app an API key of `org` asks about: the headers' (403 when another organization's),
    /// or with no headers the organization's only enabled app (400 when it has none or several).
    static func app(forAPIKeyOf org: OrgRecord, _ request: Request, _ ctx: ServiceContext) throws -> AppContext {
        if let app = try AppLookup.app(for: request, required: false, ctx) {
            guard app.org.name == org.name else {
                throw ServiceError(.forbidden, "This API key's organization does not have the app \(app.app.appID).",
                                   log: "API key of org \(org.name) for app \(app.app.appID) of org \(app.org.name)")
            }
            return app
        }
        let apps = try ctx.store.read { txn in try txn.apps().filter { $0.org == org.name && $0.enabled } }
        guard apps.count == 1 else {
            throw ServiceError(.badRequest, "The X-Bundle-ID and X-Team-ID headers are required with an API key "
                                            + "(its organization has \(apps.count) apps).",
                               hint: "Send your app's bundle identifier and Apple Developer Team ID in the headers.")
        }
        return AppContext(app: apps[0], org: org)
    }

    /// The token's device, read in `txn`: 401 when the app does not have it (a renewal finds
    /// out), 403 when it may not be served (`HeartbeatEndpoint.standing`; the log says why).
    static func device(_ claims: VerifiedTokens.Claims, app: AppRecord, in txn: Transaction) throws -> DeviceRecord {
        try standing(claims, app: app, in: txn).device
    }

    /// As `device`, with the device's lineage, which is judged too: a block applies to every
    /// key of a fingerprint, but `DeviceFlags` mirrors it only onto the keys the lineage's
    /// history keeps (the latest 32), so an older key's own record may not show it.
    static func standing(_ claims: VerifiedTokens.Claims, app: AppRecord,
                         in txn: Transaction) throws -> (device: DeviceRecord, lineage: LineageRecord) {
        guard let device = try txn.device(deviceID: claims.deviceID), device.appID == app.appID else {
            throw HeartbeatEndpoint.unauthorized("token for a device this app does not have")
        }
        let lineage = try txn.lineage(of: device)
        let blocked = lineage.flags.contains(.blocked)
        if let refusal = HeartbeatEndpoint.standing(device)
            ?? (blocked ? "device \(device.deviceID)'s fingerprint is blocked by an operator" : nil) {
            throw ServiceError(.forbidden, "This device is not served: it is revoked, invalidated or blocked.",
                               hint: "An invalidated device attests again; ask the operator about the others.",
                               log: refusal)
        }
        return (device, lineage)
    }

    /// The override subjects of a caller: its device (server id) and its SDK device id
    /// (`X-Device-ID`, client-claimed), in the order they win.
    static func overrideSubjects(device: DeviceRecord?, sdkDeviceID: String?) -> [FeatureFlagOverrideSubject] {
        (device.map { [.device($0.deviceID)] } ?? []) + (sdkDeviceID.map { [.sdk($0)] } ?? [])
    }
}
