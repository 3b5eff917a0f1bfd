import AttestCore
import AttestStore

/// The deployment's configuration: `config.json` in the data directory. Every key has a
/// default (see `ConfigurationKey.all` for the documented list); a file may set any subset.
public struct Configuration: Sendable, Equatable {
    /// `server.listen`: the address nginx listens on.
    public var listen = "127.0.0.1:8080"
    /// `server.workers`: worker processes per endpoint pool.
    public var workers = 2
    /// `server.bodyLimitBytes`: largest request body accepted.
    public var bodyLimitBytes = 65_536
    /// `server.user`: the account nginx's workers and the pools run as when `attestctl serve`
    /// starts as root (created when it is the default and missing).
    public var serviceUser = "attestedge"
    /// `server.logMaxMiB`: each log `attestctl serve` writes is rotated past this size.
    public var logMaxMiB = 64
    /// `store.durableMapSizeMiB`, `store.ephemeralMapSizeMiB`: LMDB map sizes.
    public var durableMapSizeMiB = 1024
    public var ephemeralMapSizeMiB = 256
    /// `store.sync`: `commit` or `interval`; `store.syncIntervalMs` for `interval`.
    public var sync = "commit"
    public var syncIntervalMs = 10
    /// `challenge.ttlSeconds`.
    public var challengeTTLSeconds = 300
    /// `tokens.issuer`, `tokens.lifetimeSeconds`, `tokens.algorithm`, `tokens.rotationOverlapSeconds`.
    public var tokenIssuer = "attestedge"
    public var tokenLifetimeSeconds = 3600
    public var tokenAlgorithm = "ES256"
    public var rotationOverlapSeconds = 86_400
    /// `trust.testRoots`: PEM files trusted besides Apple's root (test devices only).
    public var testRoots: [String] = []
    /// `rateLimits.validatePerIPPerMinute`: 0 disables the per-IP limit on validate.
    public var validatePerIPPerMinute = 120
    /// `rateLimits.challengePerIPPerSecond`, `rateLimits.challengeBurst`: nginx's per-IP limit
    /// on the challenge endpoint (rendered into site.conf by `attestctl serve`).
    public var challengePerIPPerSecond = 10
    public var challengeBurst = 20
    /// `webhooks.allowPrivateAddresses`.
    public var allowPrivateWebhookAddresses = false

    public init() {}

    public var storeOptions: StoreOptions {
        StoreOptions(durableMapSizeMiB: durableMapSizeMiB, ephemeralMapSizeMiB: ephemeralMapSizeMiB,
                     sync: sync == "interval" ? .interval(milliseconds: syncIntervalMs) : .commit)
    }
}
