import AttestCore
import AttestStore
import FastCGI

/// `GET /api/v1/flags?environment=production`: the caller's feature flags (design §1.3, §3.3).
///
/// ```
/// auth:  FlagsAuth (token, or API key)      targeting: X-App-Version, X-Custom-<key>, … (client-claimed)
/// ← 200 {"flags":{"key":value,…}}           keys in flag-key order; Cache-Control: no-store
/// ```
/// `environment` is optional (default `production`), at most once, `[a-z0-9][a-z0-9_-]{0,31}`,
/// never %-encoded (400 otherwise); an environment the app does not have answers
/// `{"flags":{}}`. Evaluation is `CompiledFeatureFlags.answer`: override, first matching rule,
/// rollout, default. No monthly counting; the one write is raising the lineage's latest app
/// version when `X-App-Version` is above the stored one and the stored one is at least
/// `versionRaiseInterval` old (What's New reads it): a device cannot turn its flag reads into
/// a durable write each (every durable commit also revalidates every worker's caches).
enum FlagsEndpoint {
    static let path = "/api/v1/flags"
    /// The least time between two raises of a lineage's latest version by `X-App-Version`
    /// (validate raises it at once). One hour: an upgrade shows its notes within the hour.
    static let versionRaiseInterval: Int64 = 3_600

    static func flags(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try requireGET(request)
        let environment = try Self.environment(query: request.query)
        let now = ctx.clock.now()
        let caller = try FlagsAuth.caller(request, now: now, ctx)
        let targeting = FeatureFlagTargeting(params: request.params)
        let version = ctx.store.durableVersion
        let (answer, raise) = try ctx.store.read { txn -> ([UInt8], (LineageKey, DeviceVersionsRecord)?) in
            let flags = try FeatureFlagsCache.flags(caller.app, version: version, in: txn, ctx)
            switch caller.credential {
            case .apiKey(_, let sdkDeviceID):
                let overrides = flags.hasOverrides
                    ? try overridesOf(FlagsAuth.overrideSubjects(device: nil, sdkDeviceID: sdkDeviceID),
                                      app: caller.app.app.appID, in: txn) : []
                return (flags.answer(environment: environment, caller: .apiKey(sdkDeviceID: sdkDeviceID),
                                     targeting: targeting, overrides: overrides, now: now), nil)
            case .token(let claims):
                let (device, lineage) = try FlagsAuth.standing(claims, app: caller.app.app, in: txn)
                let who = try FeatureFlagDevice.read(device, lineage: lineage, app: caller.app.app,
                                                     org: caller.app.org, now: now, in: txn, ctx)
                let overrides = flags.hasOverrides
                    ? try overridesOf(FlagsAuth.overrideSubjects(device: device, sdkDeviceID: targeting.sdkDeviceID),
                                      app: caller.app.app.appID, in: txn) : []
                let answer = flags.answer(environment: environment, caller: .device(who), targeting: targeting,
                                          overrides: overrides, now: now)
                return (answer, try versionRaise(device, reported: targeting.value(.appVersion), now: now, in: txn))
            }
        }
        if let (lineage, raised) = raise {
            try ctx.store.write([.durable]) { txn in
                let stored = try txn.deviceVersions(lineage: lineage)
                if stored.map({ (Versions.compare(raised.latest, $0.latest) ?? 0) > 0
                                && now.seconds - $0.latestAt.seconds >= versionRaiseInterval }) ?? true {
                    try txn.put(raised, lineage: lineage)
                }
            }
        }
        return Response(status: 200, headers: [Header("Content-Type", "application/json"),
                                               Header("Cache-Control", "no-store")], body: answer)
    }

    /// The lineage's versions record raised to `reported` (X-App-Version) when that is a valid
    /// version above the stored latest and the stored latest is at least `versionRaiseInterval`
    /// old; a lineage without a record (attested before What's New) starts at `reported`, so it
    /// sees no backlog until its next upgrade. `nil`: no write.
    static func versionRaise(_ device: DeviceRecord, reported: String?, now: Timestamp,
                             in txn: Transaction) throws -> (LineageKey, DeviceVersionsRecord)? {
        guard let reported, Versions.isVersion(reported) else { return nil }
        let lineage = LineageKey.of(device)
        guard var stored = try txn.deviceVersions(lineage: lineage) else {
            return (lineage, DeviceVersionsRecord(first: reported, firstAt: now, latest: reported, latestAt: now))
        }
        guard (Versions.compare(reported, stored.latest) ?? 1) > 0,
              now.seconds - stored.latestAt.seconds >= versionRaiseInterval else { return nil }
        stored.latest = reported
        stored.latestAt = now
        return (lineage, stored)
    }

    /// The app's overrides for `subjects` (one prefix scan each).
    static func overridesOf(_ subjects: [FeatureFlagOverrideSubject], app appID: String,
                            in txn: Transaction) throws -> [FeatureFlagOverrideRecord] {
        try subjects.flatMap { try txn.featureFlagOverrides(appID: appID, subject: $0) }
    }

    /// 405 for anything but GET (HEAD included: nothing to gain from it).
    static func requireGET(_ request: Request) throws {
        guard request.method == "GET" else {
            throw ServiceError(.methodNotAllowed, "\(request.method) is not allowed on \(request.path).",
                               headers: [("Allow", "GET")])
        }
    }

    /// The `environment` of a query string: `production` when absent; 400 when repeated,
    /// %-encoded or not an environment name. Other members are ignored.
    static func environment(query: String) throws -> String {
        var found: Substring?
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == "environment" else { continue }
            guard found == nil else {
                throw ServiceError(.badRequest, "The query parameter environment may be given once.")
            }
            found = parts.count == 2 ? parts[1] : ""
        }
        guard let found else { return FeatureFlagAdmin.production }
        let name = String(found)
        guard FeatureFlagAdmin.isEnvironmentName(name) else {
            throw ServiceError(.badRequest, "environment must be an environment name: [a-z0-9][a-z0-9_-]{0,31}.",
                               log: "environment \(name.prefix(64).debugDescription)")
        }
        return name
    }
}
