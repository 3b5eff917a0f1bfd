import AttestCore
import AttestStore
import FastCGI

/// Resolving the app a device request is for, from `X-Bundle-ID` and `X-Team-ID`.
enum AppLookup {
    /// The registered, enabled app the headers name (403 `app_not_registered` otherwise).
    /// `required == false` lets a request without both headers through as `nil`.
    ///
    /// Lookups are cached per worker and stay valid while `Store.durableVersion` is unchanged
    /// (a challenge flood reads nothing); after any write they are revalidated by the tenancy
    /// generation (one small read), so a change made by any process (attestctl disabling an
    /// app) is seen by the very next request on LMDB, and within a second on PostgreSQL,
    /// where another host's writes are not visible cheaply.
    static func app(for request: Request, required: Bool = true, _ ctx: ServiceContext) throws -> AppContext? {
        let caches = ctx.caches
        // The FastCGI param names nginx gives these headers, looked up directly (hot path).
        let rawBundle = request.params["HTTP_X_BUNDLE_ID"], rawTeam = request.params["HTTP_X_TEAM_ID"]
        let version = ctx.store.durableVersion
        // The same header values as the last lookup, and nothing written since: its answer,
        // without trimming, validating and hashing them again (a challenge flood for one app).
        if let last = caches.lastAppLookup, last.version == version, last.bundle == rawBundle, last.team == rawTeam {
            return last.context
        }
        func remember(_ context: AppContext) -> AppContext {
            caches.lastAppLookup = (rawBundle, rawTeam, version, context)
            return context
        }
        let bundle = rawBundle?.trimmedNonEmpty
        let team = rawTeam?.trimmedNonEmpty
        guard let bundle, let team else {
            if !required && bundle == nil && team == nil { return nil }
            throw ServiceError(.badRequest, "The X-Bundle-ID and X-Team-ID headers are required.",
                               hint: "Send your app's bundle identifier and Apple Developer Team ID in the headers.")
        }
        // Checked before the cache: with a free-form Team ID, "ABCDE12345.com" + "x" would
        // spell the same App ID as "ABCDE12345" + "com.x".
        guard AppIdentifier.isValidTeamID(team) else {
            throw ServiceError(.badRequest, "X-Team-ID must be your 10-character Apple Developer Team ID (A-Z, 0-9).",
                               log: "X-Team-ID \(team)")
        }
        guard AppIdentifier.isValidBundleID(bundle) else {
            throw ServiceError(.badRequest, "X-Bundle-ID must be a bundle identifier of at most "
                                            + "\(AppIdentifier.bundleIDMaxLength) letters, digits, '.' and '-'.",
                               log: "X-Bundle-ID \(bundle)")
        }
        let appID = AppRecord.appID(teamID: team, bundleID: bundle)
        let cached = caches.appCache[appID]
        if let cached, cached.version == version { return remember(cached.context) }
        // Orgs and apps are written only by attestctl, which returns after its own sync: a
        // lookup need not hold the answer (a challenge) for other requests' commits.
        let generation: UInt64, found: AppContext?
        do {
            (generation, found) = try ctx.store.read(awaitDurable: false) { txn -> (UInt64, AppContext?) in
                let generation = try txn.tenancyGeneration()
                if let cached, cached.generation == generation { return (generation, cached.context) }
                guard let app = try txn.app(id: appID), app.enabled, let org = try txn.org(named: app.org) else {
                    return (generation, nil)
                }
                return (generation, AppContext(app: app, org: org))
            }
        } catch let error as StoreError {
            // The store cannot answer now (a shared database unreachable): the app as last
            // read serves what needs nothing else (a challenge); requests that must write
            // fail there with their own 503.
            if let cached { return cached.context }
            throw error
        }
        if let cached, found === cached.context {
            caches.appCache[appID] = (version, generation, cached.context)
            return remember(cached.context)
        }
        guard let found else {
            throw ServiceError(.appNotRegistered, "The app \(appID) is not registered with this server.",
                               hint: "Register it with "
                                     + "'attestctl app add --org ORG --team \(team) --bundle \(bundle)'.",
                               log: "unknown or disabled app \(appID)")
        }
        // The parsed claims survive while their text and the tier that limits them are unchanged.
        if let previous = caches.appCache[appID]?.context, previous.app.customClaimsJSON == found.app.customClaimsJSON,
           previous.org.tier == found.org.tier {
            found.parsedClaims = previous.parsedClaims
        }
        if caches.appCache.count >= 1024 { caches.appCache.removeAll(keepingCapacity: true) }
        caches.appCache[appID] = (version, generation, found)
        return remember(found)
    }
}

extension String {
    /// Without leading and trailing ASCII white space; `nil` when nothing is left. Works on
    /// the UTF-8 bytes: header values are ASCII, and this runs on every request.
    var trimmedNonEmpty: String? {
        let u = utf8
        func space(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        guard let first = u.firstIndex(where: { !space($0) }) else { return nil }
        let last = u.lastIndex(where: { !space($0) })!
        if first == u.startIndex && last == u.index(before: u.endIndex) { return self }
        return String(self[first...last])
    }
}
