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
    /// `server.requestLog`: `errors` (a line per refused request; nginx's access log has every
    /// request) or `all` (also a line per success: what journald gets on a host install).
    public var requestLog = "errors"
    /// `server.keyCacheEntries`: parsed device keys each worker keeps (about 3 KB each, most
    /// of it OpenSSL's key and verify context); 0 parses the key on every refresh.
    public var keyCacheEntries = 10_000
    /// `server.tokenCacheEntries`: heartbeat tokens each worker remembers as verified, so a
    /// device's next heartbeats with the same token skip the signature check
    /// (`VerifiedTokens`); 0 checks every heartbeat's signature.
    public var tokenCacheEntries = 96_000
    /// `server.maxHeldAnswers`: answers a pool worker holds while it serves queued requests
    /// (their commit reaching the disk, or their group's commit), and so the largest group
    /// commit; 1 holds none. 32: with many clients a group then spans a sync's worth of
    /// requests (issue #12: refresh in `commit` mode at 64 connections, 0.22 → 0.07
    /// `fdatasync` per request against 8); with few, groups end on an empty queue first.
    public var maxHeldAnswers = 32
    /// `store.backend`: `lmdb` (embedded, one host) or `postgres` (shared by several hosts).
    public var storeBackend = "lmdb"
    /// `store.postgres.url`: libpq connection string or URI, for `store.backend: postgres`.
    public var postgresURL = ""
    /// `store.postgres.maxRetries`: runs of a transaction that lost a serialization conflict.
    public var postgresMaxRetries = 20
    /// `store.durableMapSizeMiB`, `store.ephemeralMapSizeMiB`: LMDB map sizes.
    public var durableMapSizeMiB = 1024
    public var ephemeralMapSizeMiB = 256
    /// `store.sync`: `commit` or `interval`; `store.syncIntervalMs` for `interval`.
    public var sync = "commit"
    public var syncIntervalMs = 10
    /// `challenge.ttlSeconds`.
    public var challengeTTLSeconds = 300
    /// `challenge.usedRetentionSeconds`: how long a consumed challenge's id is kept past its
    /// expiry, so a wall clock stepping back by up to this much cannot make it valid again.
    public var usedChallengeRetentionSeconds = 600
    /// `tokens.issuer`, `tokens.lifetimeSeconds`, `tokens.algorithm`, `tokens.rotationOverlapSeconds`.
    public var tokenIssuer = "attestedge"
    public var tokenLifetimeSeconds = 3600
    public var tokenAlgorithm = "ES256"
    public var rotationOverlapSeconds = 86_400
    /// `tokens.publicationDelaySeconds`: how long a rotated-in key is in jwks.json before it
    /// signs; at least the JWKS max-age nginx sends (300 s), twice that by default.
    public var publicationDelaySeconds = 600
    /// `tokens.audience`: what a token's `aud` is. `appId`: the App ID, `TEAMID.bundleId`,
    /// unique to one team's app. `bundle`: the bundle ID alone (the hosted service's
    /// contract, SPEC §5), which two teams' apps can share; the default, so a data directory
    /// written before the key existed keeps its relying parties working after an upgrade.
    /// New data directories get `appId` (`newDataDirectory`).
    public var tokenAudience = "bundle"
    public static let tokenAudiences = ["appId", "bundle"]
    /// `trust.testRoots`: PEM files trusted besides Apple's root (test devices only).
    public var testRoots: [String] = []
    /// `rateLimits.validatePerIPPerMinute`: 0 disables the per-IP limit on validate.
    public var validatePerIPPerMinute = 120
    /// `rateLimits.refreshPerIPPerMinute`: 0 disables the per-IP limit on refresh.
    public var refreshPerIPPerMinute = 240
    /// `rateLimits.challengePerIPPerSecond`, `rateLimits.challengeBurst`: nginx's per-IP limit
    /// on the challenge endpoint (rendered into site.conf by `attestctl serve`).
    public var challengePerIPPerSecond = 10
    public var challengeBurst = 20
    /// `compat.unknownKeyStatus`: 404 (`not_found`, the contract) or 409 (`reattest_required`,
    /// which makes the shipping SDK re-attest by itself) for a refresh with an unknown keyId.
    public var unknownKeyStatus = 404
    /// `compat.madLimitStatus`: 402 (`quota_exceeded`, the contract) or 429 with `error:
    /// "mad_limit_exceeded"` (what the shipping SDK turns into its `limitExceeded` error).
    public var madLimitStatus = 402
    /// `heartbeat.intervalSeconds`: what heartbeat answers as `interval` and `nextHeartbeatSeconds`.
    public var heartbeatIntervalSeconds = 120
    /// `usage.apiKeyDevicesPerMonth`: devices an organization's API keys may report a month (0: no cap).
    public var apiKeyDevicesPerMonth = 1_000
    /// `webhooks.allowPrivateDestinations`: lifts the webhook SSRF guard (plain `http://` and
    /// loopback, private, link-local or multicast addresses) — tests with a local receiver only.
    public var allowPrivateWebhookAddresses = false
    /// `webhooks.queueEvents`: false queues no webhook event at all (deployments without webhooks).
    public var queueWebhookEvents = true
    /// `webhooks.retrySchedule`: seconds to wait before each retry after a failed attempt.
    public var webhookRetrySchedule = [60, 300, 1800]
    /// `webhooks.timeoutSeconds`: one attempt's whole time limit.
    public var webhookTimeoutSeconds = 10
    /// `webhooks.concurrencyPerEndpoint`: attempts in flight to one endpoint at most.
    public var webhookConcurrencyPerEndpoint = 2
    /// `webhooks.maxConcurrentDeliveries`: attempts in flight in all (the sender's threads).
    public var webhookMaxConcurrent = 16
    /// `webhooks.concurrencyPerOrganization`: attempts in flight to one organization's
    /// endpoints at most, all together (0: no limit).
    public var webhookConcurrencyPerOrganization = 8
    /// `webhooks.writesPerOrganizationPerMinute`: management API changes (create, update,
    /// delete) one organization may make per minute (0: no limit).
    public var webhookWritesPerOrganizationPerMinute = 60
    /// `webhooks.logRetentionDays`: finished deliveries are removed from the log this long
    /// after they were created (0: kept until their endpoint is deleted).
    public var webhookLogRetentionDays = 30
    /// `webhooks.endpointsPerOrganization`: endpoints one organization may register.
    public var webhookEndpointsPerOrganization = 20
    /// `webhooks.storedDeliveriesPerOrganization`: deliveries (pending and logged) plus queued
    /// test events one organization may keep in the store (`WebhookCountRecord`; 0: no limit).
    public var webhookStoredPerOrganization = 20_000
    /// `webhooks.testEventsPerEndpointPerMinute`, `webhooks.testEventsPerOrganizationPerMinute`:
    /// `POST /api/v1/org/webhooks/:id/test` calls queued per minute (0: no limit).
    public var webhookTestsPerEndpointPerMinute = 10
    public var webhookTestsPerOrganizationPerMinute = 30

    /// The SDK treats a token as expired 300 s before its `expiresAt`; shorter lifetimes than
    /// this would make every call re-run challenge and assertion.
    public static let minimumTokenLifetimeSeconds = 600

    public init() {}

    /// What `attestctl init` writes into a new data directory's config.json: the defaults,
    /// with the settings that differ from what an older config.json without them means
    /// (`tokens.audience`).
    public static var newDataDirectory: Configuration {
        var c = Configuration()
        c.tokenAudience = "appId"
        return c
    }

    public var storeOptions: StoreOptions {
        StoreOptions(backend: storeBackend == "postgres" ? .postgres(url: postgresURL) : .lmdb,
                     durableMapSizeMiB: durableMapSizeMiB, ephemeralMapSizeMiB: ephemeralMapSizeMiB,
                     sync: sync == "interval" ? .interval(milliseconds: syncIntervalMs) : .commit,
                     maxRetries: postgresMaxRetries)
    }
}

extension Configuration {
    /// The longest a token signed now can stay valid: the deployment's lifetime or an app's
    /// own (`app add --token-lifetime`), whichever is longer. A key retired now must stay in
    /// the JWKS at least that long (`attestctl keys rotate`).
    public func longestTokenLifetime(apps: [AppRecord]) -> Int {
        apps.map { Int($0.tokenLifetimeSeconds) }.reduce(tokenLifetimeSeconds, max)
    }
}
