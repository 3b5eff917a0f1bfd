import AttestCore
import AttestStore
import FastCGI

/// `POST /api/v1/heartbeat`: marks a device active for the month (docs/contract.md §2, §4), as the shipping
/// SDK sends it.
///
/// ```
/// token mode:   X-Bundle-ID, X-Team-ID, Authorization: Bearer <token from validate/refresh>
/// API-key mode: Authorization: Bearer aat_…   (simulator and CI builds; no app headers)
/// → {"sdkVersion"?, "appState"?, "deviceId"? (required in API-key mode)}
/// ← 200 {"interval": 120, "nextHeartbeatSeconds": 120}
/// ```
/// A token must verify with a key the JWKS publishes now, be unexpired, be for the app in the
/// headers (its `team_id` and `bundle_id`), and name a device of that app that is active (not
/// revoked, not invalidated by a failed assertion) and not blocked by an operator (the
/// lineage's flag, mirrored onto every key of it: `DeviceFlags`); anything else is 401
/// `unauthorized` (the SDK then refreshes its token and resends once). The signature is checked
/// the first time a worker sees a token, the rest on every heartbeat (`VerifiedTokens`).
/// API-key devices are counted apart and never billed; a new one beyond
/// `usage.apiKeyDevicesPerMonth` is 429 until the month ends. A device not yet counted this month can
/// be refused with 402 like at validate. A device already marked active today costs one read
/// transaction (the device and its day together), no write.
public enum HeartbeatEndpoint {
    public static let path = "/api/v1/heartbeat"

    static func heartbeat(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try ValidateEndpoint.requirePOST(request, path, bodyLimit: ctx.configuration.bodyLimitBytes)
        let now = ctx.clock.now()
        let fields = try RequestFields(body: request.body.isEmpty ? Array("{}".utf8) : request.body)
        _ = try fields.optionalText("sdkVersion")
        _ = try fields.optionalText("appState")
        let deviceIDField = try fields.optionalText("deviceId")
        guard let credential = APIKeys.bearer(request) else {
            throw unauthorized("no Authorization: Bearer credential")
        }
        let admission: MonthlyAdmission
        let org: OrgRecord
        if credential.hasPrefix(APIKeys.prefix) {
            org = try APIKeys.organization(apiKey: credential, for: .heartbeat, ctx)
            guard let deviceID = deviceIDField else {
                throw ServiceError(.badRequest, "The field deviceId is required with an API key.")
            }
            let identity = UsageIdentity.apiKeyDevice(org: org.name, deviceID: deviceID)
            admission = try MonthlyCounter.markActive(identity, apiKey: true, appID: "", org: org, now: now, ctx)
        } else {
            let app = try AppLookup.app(for: request, ctx)!
            org = app.org
            let (identity, countedToday) = try deviceForToken(credential, app: app.app, org: org, now: now, ctx)
            admission = try MonthlyCounter.markActive(identity, countedToday: countedToday, apiKey: false,
                                                      appID: app.app.appID, org: org, now: now, ctx)
        }
        switch admission {
        case .refused(let limit, let current):
            throw ServiceError.quotaExceeded(limit: limit, current: current, org: org,
                                             compatStatus: ctx.configuration.madLimitStatus)
        case .apiKeyDevicesCapped(let limit):
            throw apiKeyDevicesCapped(limit: limit, org: org, now: now)
        case .admitted, .alreadyCounted:
            break
        }
        let interval = JSONValue.int(Int64(ctx.configuration.heartbeatIntervalSeconds))
        return ServiceContext.json(.object([("interval", interval), ("nextHeartbeatSeconds", interval)]))
    }

    /// 429 `rate_limited` until the month ends: the organization's API keys reported
    /// `usage.apiKeyDevicesPerMonth` devices this month; devices already reported go on.
    /// Counted as `attestedge_rate_limited_total{bucket="api-key-devices"}`.
    static func apiKeyDevicesCapped(limit: Int, org: OrgRecord, now: Timestamp) -> ServiceError {
        ServiceMetrics.rateLimited(bucket: "api-key-devices")
        let c = now.civil
        let daysLeft = Int64(Timestamp.daysInMonth(year: c.year, month: c.month) - c.day)
        let retry = daysLeft * 86_400 + 86_400 - Int64(c.hour * 3600 + c.minute * 60 + c.second)
        return ServiceError(.rateLimited, "This organization's API keys have reported \(limit) devices this month, the "
                                          + "most allowed; new ones are not counted until the month ends.",
                            hint: "Raise usage.apiKeyDevicesPerMonth, or reuse deviceIds in simulator and CI builds.",
                            log: "org \(org.name): API-key devices at \(limit) this month",
                            headers: [("Retry-After", String(retry)), ("X-RateLimit-Limit", String(limit)),
                                      ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retry))])
    }

    static func unauthorized(_ log: String) -> ServiceError {
        ServiceError(.unauthorized, "Invalid or expired token.",
                     hint: "Refresh the token (POST /api/v1/attestation/refresh) and retry.", log: log)
    }

    /// The monthly identity of the stored device a heartbeat token speaks for (401 unless
    /// everything checks out), and whether it is already counted today (read in the same
    /// transaction: one round trip fewer on PostgreSQL). The signature is checked the first
    /// time this worker sees the token (`VerifiedTokens`); the expiry, the app and the device
    /// on every heartbeat.
    static func deviceForToken(_ token: String, app: AppRecord, org: OrgRecord, now: Timestamp,
                               _ ctx: ServiceContext) throws -> (UsageIdentity, countedToday: Bool) {
        let claims = try tokenClaims(token, app: app, now: now, ctx)
        let found = try ctx.store.read { txn -> (DeviceRecord, UsageIdentity, Bool)? in
            Prefetch.heartbeat(deviceID: claims.deviceID, org: org.name, now: now, in: txn, ctx.caches)
            guard let device = try txn.device(deviceID: claims.deviceID), device.appID == app.appID else { return nil }
            let identity = UsageIdentity.device(device)
            Prefetch.rememberHeartbeat(device, identity: identity, in: txn, ctx.caches)
            return (device, identity, try MonthlyCounter.isCountedToday(identity, org: org, now: now, in: txn))
        }
        guard let (device, identity, countedToday) = found else {
            throw unauthorized("token for a device this app does not have")
        }
        if let refusal = standing(device) { throw unauthorized(refusal) }
        return (identity, countedToday)
    }

    /// The claims of a token for `app` that verifies and has not expired (401 `unauthorized`
    /// otherwise: a renewal can help). The signature and issuer are checked the first time this
    /// worker sees the token (`VerifiedTokens`), the expiry and the app every time. The device
    /// it names is the caller's to read and judge (`standing`). Heartbeat and the flags pool.
    static func tokenClaims(_ token: String, app: AppRecord, now: Timestamp,
                            _ ctx: ServiceContext) throws -> VerifiedTokens.Claims {
        let verifier = tokenVerifier(at: now, ctx)
        let digest = VerifiedTokens.Digest(token: token)
        let claims = try ctx.caches.verifiedTokens.claims(for: digest)
            ?? verifiedClaims(token, verifier, digest: digest, ctx)
        guard now.seconds < claims.expires else { throw unauthorized("token expired") }
        guard claims.bundleID == app.bundleID, claims.teamID == app.teamID else {
            throw unauthorized("token issued for another app or issuer")
        }
        return claims
    }

    /// Why a stored device may not be served (for the log), or `nil` when it is active and not
    /// blocked. The record carries the status and the lineage's flags (mirrored onto each key:
    /// `DeviceFlags`), so judging costs no read of its own. Heartbeat answers these 401; the
    /// flags pool 403 (a renewal cannot help, and the SDK's stream would retry every second).
    static func standing(_ device: DeviceRecord) -> String? {
        switch device.status {
        case .revoked: return "device \(device.deviceID) is revoked"
        case .invalidated: return "device \(device.deviceID) was invalidated: it must attest again"
        case .active: break
        }
        if device.operatorFlags.contains(.blocked) { return "device \(device.deviceID) is blocked by an operator" }
        return nil
    }

    /// Checks the token's signature and issuer and reads the claims a heartbeat judges, which
    /// the set remembers (the caller judges the expiry, as for a token from the set).
    private static func verifiedClaims(_ token: String, _ verifier: JWKSVerifier, digest: VerifiedTokens.Digest,
                                       _ ctx: ServiceContext) throws -> VerifiedTokens.Claims {
        let claims: JSONValue
        do { claims = try verifier.verify(token) } catch {
            throw unauthorized("token: \(error.reason)")
        }
        guard let exp = claims["exp"]?.intValue else { throw unauthorized("token expired") }
        // `bundle_id`, not `aud`: the audience's form is a setting (`tokens.audience`), and a
        // token minted before it changed still speaks for its app until it expires.
        guard let bundleID = claims["bundle_id"]?.stringValue, let teamID = claims["team_id"]?.stringValue,
              claims["iss"]?.stringValue == ctx.configuration.tokenIssuer else {
            throw unauthorized("token issued for another app or issuer")
        }
        guard let deviceID = claims["device_id"]?.stringValue else {
            throw unauthorized("token for a device this app does not have")
        }
        let verified = VerifiedTokens.Claims(expires: exp, bundleID: bundleID, teamID: teamID, deviceID: deviceID)
        ctx.caches.verifiedTokens.insert(verified, for: digest)
        return verified
    }

    /// A verifier for the keys the JWKS publishes at `now`, rebuilt (and `verifiedTokens`
    /// emptied) when that set changes.
    static func tokenVerifier(at now: Timestamp, _ ctx: ServiceContext) -> JWKSVerifier {
        let published = ctx.keyRing.publishedEntries(at: now)
        let kids = published.map(\.kid)
        if let cached = ctx.caches.tokenVerifierCache, cached.kids == kids { return cached.verifier }
        let verifier = JWKSVerifier(jwks: ["keys": .array(published.compactMap(\.jwk))])
        ctx.caches.tokenVerifierCache = (kids, verifier)
        // A key that left the set takes its tokens' standing with it.
        ctx.caches.verifiedTokens.removeAll()
        return verifier
    }
}
