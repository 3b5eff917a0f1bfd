import AttestStore

/// Each worker's compiled feature flags per app (`WorkerCaches.featureFlags`, at most
/// `capacity` apps; emptied when full, like the app cache).
///
/// Validity, like `AppLookup`: an entry checked at the store's current `durableVersion` is
/// used without a read. Otherwise the app's `FeatureFlagAppRecord.generation` is read in the
/// request's own read transaction (one more get), and the flags are compiled again only when
/// it changed (every write to an app's flags, environments, overrides or notes bumps it) or
/// the organization's tier did. A change by any process is seen at the next request.
enum FeatureFlagsCache {
    static let capacity = 1024

    /// `app`'s compiled flags. `version`: `Store.durableVersion` read before `txn` began.
    static func flags(_ app: AppContext, version: Int, in txn: Transaction,
                      _ ctx: ServiceContext) throws -> CompiledFeatureFlags {
        let appID = app.app.appID, tier = app.org.tier
        let caches = ctx.caches
        if let entry = caches.featureFlags[appID], entry.flags.tier == tier {
            if entry.version == version { return entry.flags }
            if try (txn.featureFlagGeneration(appID: appID) ?? 0) == entry.flags.generation {
                caches.featureFlags[appID] = (version, entry.flags)
                return entry.flags
            }
        }
        let built = try CompiledFeatureFlags.build(appID: appID, tier: tier, in: txn)
        if caches.featureFlags.count >= capacity { caches.featureFlags.removeAll(keepingCapacity: true) }
        caches.featureFlags[appID] = (version, built)
        return built
    }
}
