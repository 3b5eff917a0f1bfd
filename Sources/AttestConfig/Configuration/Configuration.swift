import AttestCore
import AttestStore

/// The deployment's configuration: `config.json` in the data directory. Every key has a
/// default; a file may set any subset. Each property is the key its comment names: what the
/// key means, its values and its default are documented once, in `ConfigurationKey.all`
/// (`attestctl config show`, and docs/configuration.md, rendered from it).
public struct Configuration: Sendable, Equatable {
    /// `server.listen` (`ListenAddress`).
    public var listen = "127.0.0.1:8080"
    /// `server.metricsListen` (`ListenAddress`): the monitor pool's `/metrics`, for Prometheus.
    public var metricsListen = "127.0.0.1:9469"
    /// `server.workers`.
    public var workers = 2
    /// `server.bodyLimitBytes`.
    public var bodyLimitBytes = 65_536
    /// `server.user`.
    public var serviceUser = "attestedge"
    /// `server.requestLog`.
    public var requestLog = RequestLog.errors
    /// `server.keyCacheEntries`.
    public var keyCacheEntries = 10_000
    /// `server.tokenCacheEntries` (`VerifiedTokens`).
    public var tokenCacheEntries = 96_000
    /// `server.maxHeldAnswers`. 32: with many clients a group then spans a sync's worth of
    /// requests (issue #12: refresh in `commit` mode at 64 connections, 0.22 → 0.07
    /// `fdatasync` per request against 8); with few, groups end on an empty queue first.
    public var maxHeldAnswers = 32
    /// `server.logMaxMiB`.
    public var logMaxMiB = 64
    /// `store.backend`.
    public var storeBackend = StoreBackend.lmdb
    /// `store.postgres.url`.
    public var postgresURL = ""
    /// `store.postgres.maxRetries`.
    public var postgresMaxRetries = 20
    /// `store.durableMapSizeMiB`.
    public var durableMapSizeMiB = 1024
    /// `store.ephemeralMapSizeMiB`.
    public var ephemeralMapSizeMiB = 256
    /// `store.sync`.
    public var sync = Sync.commit
    /// `store.syncIntervalMs`.
    public var syncIntervalMs = 10
    /// `challenge.ttlSeconds`.
    public var challengeTTLSeconds = 300
    /// `challenge.usedRetentionSeconds`.
    public var challengeUsedRetentionSeconds = 600
    /// `tokens.issuer`.
    public var tokenIssuer = "attestedge"
    /// `tokens.lifetimeSeconds`.
    public var tokenLifetimeSeconds = 3600
    /// `tokens.algorithm`.
    public var tokenAlgorithm = TokenAlgorithm.es256
    /// `tokens.audience`. `bundle` by default, so a data directory written before the key
    /// existed keeps its relying parties working after an upgrade; new data directories get
    /// `appId` (`newDataDirectory`).
    public var tokenAudience = TokenAudience.bundle
    /// `tokens.rotationOverlapSeconds`.
    public var rotationOverlapSeconds = 86_400
    /// `tokens.publicationDelaySeconds`.
    public var publicationDelaySeconds = 600
    /// `trust.testRoots`.
    public var testRoots: [String] = []
    /// `trust.testReceiptRoots`.
    public var testReceiptRoots: [String] = []
    /// `rateLimits.validatePerIPPerMinute`.
    public var validatePerIPPerMinute = 120
    /// `rateLimits.refreshPerIPPerMinute`.
    public var refreshPerIPPerMinute = 240
    /// `rateLimits.challengePerIPPerSecond` (rendered into site.conf).
    public var challengePerIPPerSecond = 10
    /// `rateLimits.challengeBurst` (rendered into site.conf).
    public var challengeBurst = 20
    /// `compat.unknownKeyStatus`.
    public var unknownKeyStatus = 404
    /// `compat.madLimitStatus`.
    public var madLimitStatus = 402
    /// `heartbeat.intervalSeconds`.
    public var heartbeatIntervalSeconds = 120
    /// `flags.keepaliveSeconds` (rendered into site.conf).
    public var flagStreamKeepaliveSeconds = 20
    /// `flags.streamMaxSeconds` (rendered into site.conf).
    public var flagStreamMaxSeconds = 300
    /// `flags.streamMemoryMiB` (rendered into site.conf).
    public var flagStreamMemoryMiB = 32
    /// `whatsNew.maxNotes`.
    public var whatsNewMaxNotes = 20
    /// `health.maxMapPercent` (`HealthEndpoint`).
    public var maxMapPercent = 90
    /// `usage.apiKeyDevicesPerMonth`.
    public var apiKeyDevicesPerMonth = 1_000
    /// `webhooks.allowPrivateDestinations`.
    public var webhookAllowPrivateDestinations = false
    /// `webhooks.queueEvents`.
    public var webhookQueueEvents = true
    /// `webhooks.retrySchedule`.
    public var webhookRetrySchedule = [60, 300, 1800]
    /// `webhooks.timeoutSeconds`.
    public var webhookTimeoutSeconds = 10
    /// `webhooks.concurrencyPerEndpoint`.
    public var webhookConcurrencyPerEndpoint = 2
    /// `webhooks.maxConcurrentDeliveries`.
    public var webhookMaxConcurrentDeliveries = 16
    /// `webhooks.concurrencyPerOrganization`.
    public var webhookConcurrencyPerOrganization = 8
    /// `webhooks.writesPerOrganizationPerMinute`.
    public var webhookWritesPerOrganizationPerMinute = 60
    /// `flags.writesPerOrganizationPerMinute` (`FlagsAdminEndpoint`).
    public var flagWritesPerOrganizationPerMinute = 60
    /// `feedback.requestsPerDevicePerDay` (`FeedbackRates`).
    public var feedbackRequestsPerDevicePerDay = 10
    /// `feedback.votesPerDevicePerHour`.
    public var feedbackVotesPerDevicePerHour = 60
    /// `feedback.commentsPerDevicePerHour`.
    public var feedbackCommentsPerDevicePerHour = 30
    /// `feedback.ticketsPerDevicePerDay`.
    public var feedbackTicketsPerDevicePerDay = 5
    /// `feedback.messagesPerDevicePerHour`.
    public var feedbackMessagesPerDevicePerHour = 30
    /// `webhooks.logRetentionDays`.
    public var webhookLogRetentionDays = 30
    /// `console.url` (empty: the server's own address).
    public var consoleURL = ""
    /// `console.loginMinutes` (`ConsoleSignIn`).
    public var consoleLoginMinutes = 15
    /// `console.sessionHours`.
    public var consoleSessionHours = 8
    /// `console.auditRetentionDays` (`OrgAudit`).
    public var consoleAuditRetentionDays = 400
    /// `console.auditEntriesPerOrganization`.
    public var consoleAuditEntriesPerOrganization = 200_000
    /// `org.writesPerOrganizationPerMinute` (`OrgWriteLimit`).
    public var orgWritesPerOrganizationPerMinute = 60
    /// `org.apiKeysPerOrganization` (`OrgAPIKeysEndpoint`).
    public var orgAPIKeysPerOrganization = 100
    /// `webhooks.endpointsPerOrganization`.
    public var webhookEndpointsPerOrganization = 20
    /// `webhooks.storedDeliveriesPerOrganization` (counted in `WebhookCountRecord`).
    public var webhookStoredDeliveriesPerOrganization = 20_000
    /// `webhooks.testEventsPerEndpointPerMinute`.
    public var webhookTestEventsPerEndpointPerMinute = 10
    /// `webhooks.testEventsPerOrganizationPerMinute`.
    public var webhookTestEventsPerOrganizationPerMinute = 30
    /// `receipts.seenWithinDays`.
    public var receiptSeenWithinDays = 7
    /// `receipts.intervalHours`.
    public var receiptIntervalHours = 24
    /// `receipts.firstDelaySeconds`.
    public var receiptFirstDelaySeconds = 60
    /// `receipts.requestsPerSecond`.
    public var receiptRequestsPerSecond = 5
    /// `receipts.appleURL` ("" = Apple's hosts by environment).
    public var receiptAppleURL = ""
    /// `receipts.appleCAFile` ("" = the system's CAs).
    public var receiptAppleCAFile = ""
    /// `receipts.authorizationPrefix` ("" = the JWT alone).
    public var receiptAuthorizationPrefix = ""

    /// When attest-receipts sends each receipt (`receipts.*`).
    public var receiptSchedule: RedemptionSchedule {
        RedemptionSchedule(intervalHours: receiptIntervalHours, firstDelaySeconds: receiptFirstDelaySeconds,
                           seenWithinDays: receiptSeenWithinDays)
    }

    /// The SDK treats a token as expired 300 s before its `expiresAt`; shorter lifetimes than
    /// this would make every call re-run challenge and assertion.
    public static let minimumTokenLifetimeSeconds = 600

    public init() {}

    /// What `attestctl init` writes into a new data directory's config.json: the defaults,
    /// with the settings that differ from what an older config.json without them means
    /// (`tokens.audience`).
    public static var newDataDirectory: Configuration {
        var c = Configuration()
        c.tokenAudience = .appId
        return c
    }

    public var storeOptions: StoreOptions {
        StoreOptions(backend: storeBackend == .postgres ? .postgres(url: postgresURL) : .lmdb,
                     durableMapSizeMiB: durableMapSizeMiB, ephemeralMapSizeMiB: ephemeralMapSizeMiB,
                     sync: sync == .interval ? .interval(milliseconds: syncIntervalMs) : .commit,
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
