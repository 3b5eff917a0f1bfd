import AttestConfig
import AttestCore
import AttestStore

/// What one worker process learns while it serves, kept for its next requests: parsed keys,
/// app lookups, the heartbeat's token verifier and verified tokens, prefetch hints, and the
/// counters that pace its sweeps. Owned by the worker's `ServiceContext` (one request at a time
/// per process, so no locking); every entry can be rebuilt from the store, the key ring and the
/// configuration, so losing them all changes no answer.
final class WorkerCaches {
    /// Parsed device keys by keyId: a keyId is the hash of its key, so an entry never goes
    /// stale. At most `server.keyCacheEntries`; when full it starts again empty (`publicKey`).
    var publicKeys: [[UInt8]: ECPublicKey] = [:]
    let publicKeyCapacity: Int
    /// App lookups by App ID, with the durable version they were read at (`AppLookup`).
    var appCache: [String: (version: Int, generation: UInt64, context: AppContext)] = [:]
    /// The last successful app lookup: the raw header values it was for, and its cache entry.
    var lastAppLookup: (bundle: String?, team: String?, version: Int, context: AppContext)?
    /// The clock second the signing keys were last checked (`SigningKeys.maintain`).
    var lastKeyCheck = Timestamp(seconds: 0)
    /// The heartbeat's token verifier and the key ids it was built from (`HeartbeatEndpoint`).
    var tokenVerifierCache: (kids: [String], verifier: JWKSVerifier)?
    /// Heartbeat tokens whose signature verified in this process (`server.tokenCacheEntries`).
    var verifiedTokens: VerifiedTokens
    /// Where a heartbeat's reads went last time, by deviceId (`Prefetch.heartbeat`; only where
    /// the store prefetches).
    var heartbeatHints = HeartbeatHints()
    /// Ephemeral writes of device requests this process has made: every
    /// `RateLimits.sweepInterval`-th also sweeps (`RateLimits.sweepExpiredIfDue`).
    var ephemeralWrites = 0
    /// Countings of a device for the month this process has made that reached the sweep of
    /// past months: every `RateLimits.sweepInterval`-th also sweeps
    /// (`MonthlyCounter.sweepCountedDevicesIfDue`).
    var usageCountings = 0
    /// Compiled feature flags by App ID, with the durable version they were last checked at
    /// (`FeatureFlagsCache`).
    var featureFlags: [String: (version: Int, flags: CompiledFeatureFlags)] = [:]
    /// The last `/healthz` verdict, reused within its second (`HealthEndpoint.current`).
    var healthVerdict: HealthVerdict?

    init(_ configuration: Configuration) {
        publicKeyCapacity = configuration.keyCacheEntries
        verifiedTokens = VerifiedTokens(capacity: configuration.tokenCacheEntries)
    }

    /// Parsed public key of a stored device.
    func publicKey(for device: DeviceRecord) throws -> ECPublicKey {
        if let key = publicKeys[device.keyID] { return key }
        let key = try ECPublicKey(x962Point: device.publicKey)
        guard publicKeyCapacity > 0 else { return key }
        if publicKeys.count >= publicKeyCapacity { publicKeys.removeAll(keepingCapacity: true) }
        publicKeys[device.keyID] = key
        return key
    }
}
