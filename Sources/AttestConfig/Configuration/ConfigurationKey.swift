import AttestCore

/// One documented configuration key: its dotted name, what it means, its type and range, and
/// how it reads and writes a `Configuration`.
public struct ConfigurationKey: Sendable {
    public enum Kind: Sendable {
        case integer(ClosedRange<Int>)
        /// A whole number from a short list (HTTP statuses of a compatibility switch).
        case integerChoice([Int])
        case string
        /// A string that may be empty (a setting that is off until set).
        case optionalString
        case choice([String])
        case bool
        case stringList
        /// An array of whole numbers, each in the range, at most 16.
        case integerList(ClosedRange<Int>)
    }

    public let name: String
    public let doc: String
    public let kind: Kind
    let get: @Sendable (Configuration) -> JSONValue
    let set: @Sendable (inout Configuration, JSONValue) -> Void

    /// Checks `value` against the kind; returns the problem, or `nil` when it fits.
    public func problem(with value: JSONValue) -> String? {
        switch kind {
        case .integer(let range):
            guard let n = value.intValue, n >= Int64(range.lowerBound), n <= Int64(range.upperBound) else {
                return "must be a whole number in \(range.lowerBound)...\(range.upperBound)"
            }
        case .integerChoice(let options):
            guard let n = value.intValue, options.contains(Int(n)) else {
                return "must be one of " + options.map(String.init).joined(separator: ", ")
            }
        case .string:
            guard let s = value.stringValue, !s.isEmpty else { return "must be a non-empty string" }
        case .optionalString:
            guard value.stringValue != nil else { return "must be a string" }
        case .choice(let options):
            guard let s = value.stringValue, options.contains(s) else {
                return "must be one of " + options.map { "\"\($0)\"" }.joined(separator: ", ")
            }
        case .bool:
            guard value.boolValue != nil else { return "must be true or false" }
        case .stringList:
            guard let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                return "must be an array of strings"
            }
        case .integerList(let range):
            guard let items = value.arrayValue, items.count <= 16,
                  items.allSatisfy({ $0.intValue.map { $0 >= Int64(range.lowerBound) && $0 <= Int64(range.upperBound) } ?? false }) else {
                return "must be an array of at most 16 whole numbers in \(range.lowerBound)...\(range.upperBound)"
            }
        }
        return nil
    }

    static func int(_ name: String, _ doc: String, _ range: ClosedRange<Int>, _ keyPath: WritableKeyPath<Configuration, Int>) -> ConfigurationKey {
        nonisolated(unsafe) let path = keyPath  // key paths to stored properties of a value type are immutable
        return ConfigurationKey(name: name, doc: doc, kind: .integer(range), get: { .int(Int64($0[keyPath: path])) },
                                set: { $0[keyPath: path] = Int($1.intValue!) })
    }

    static func text(_ name: String, _ doc: String, _ kind: Kind = .string, _ keyPath: WritableKeyPath<Configuration, String>) -> ConfigurationKey {
        nonisolated(unsafe) let path = keyPath
        return ConfigurationKey(name: name, doc: doc, kind: kind, get: { .string($0[keyPath: path]) },
                                set: { $0[keyPath: path] = $1.stringValue! })
    }

    /// Every key, in the order `attestctl config show` prints them.
    public static let all: [ConfigurationKey] = [
        .text("server.listen", "Address nginx listens on: HOST:PORT (HOST an IPv4 address, [IPv6], a host name or *), optionally followed by \" reuseport\"; nothing else (see ListenAddress).", .string, \.listen),
        .int("server.workers", "Worker processes per endpoint pool.", 1...64, \.workers),
        .int("server.bodyLimitBytes", "Largest request body accepted (larger: 413 payload_too_large).", 1024...1_048_576, \.bodyLimitBytes),
        .text("server.user", "Unprivileged user nginx and the pools run as when attestctl serve starts as root (\"attestedge\" is created if missing). Once the data directory belongs to an account, naming another here (root included) is refused: attestctl serve --user chooses.", .string, \.serviceUser),
        .text("server.requestLog", "\"errors\": the pools log a line per refused request (requestId, endpoint, status, code, µs, detail). \"all\": also a line per success (host installs, where journald is the request log).", .choice(["errors", "all"]), \.requestLog),
        .int("server.keyCacheEntries", "Parsed device keys each worker keeps for refresh (about 3 KB each); 0 parses the key on every refresh.", 0...1_000_000, \.keyCacheEntries),
        .int("server.tokenCacheEntries", "Heartbeat tokens each worker remembers as verified (8.4 MB a worker when 96000 are kept): a device's later heartbeats with the same token skip the signature check, not the expiry, app, device and key checks; 0 checks every heartbeat's signature.", 0...10_000_000, \.tokenCacheEntries),
        .int("server.maxHeldAnswers", "Answers a pool worker holds while it serves queued requests (with store.sync \"commit\", until their commit reaches the disk); also the largest group of validate and refresh writes committed together. Lower trades commits (throughput) for tail latency; 1 holds none.", 1...64, \.maxHeldAnswers),
        .int("server.logMaxMiB", "attestctl serve rotates each of its logs past this size, keeping one previous file (NAME.1).", 1...65_536, \.logMaxMiB),
        .text("store.backend", "\"lmdb\": the embedded store under the data directory (one host). \"postgres\": a PostgreSQL-protocol database shared by several hosts (store.postgres.url; run 'attestctl store migrate').", .choice(["lmdb", "postgres"]), \.storeBackend),
        .text("store.postgres.url", "libpq connection string or URI of the shared database, e.g. \"host=db1 dbname=attestedge user=attestedge\" (keep passwords in ~/.pgpass or passfile=, not here).", .optionalString, \.postgresURL),
        .int("store.postgres.maxRetries", "How many times a transaction that lost a serialization conflict (to another host or worker) runs again. A run after 3 lost conflicts, and the last one, runs alone (every other writer held off), so conflicts alone do not end in 503.", 0...1000, \.postgresMaxRetries),
        .int("store.durableMapSizeMiB", "Size limit of the durable LMDB environment (devices, apps…).", 1...1_048_576, \.durableMapSizeMiB),
        .int("store.ephemeralMapSizeMiB", "Size limit of the ephemeral LMDB environment (used challenges, rate windows); reserved on disk when the store opens (ext4, XFS, tmpfs).", 1...65_536, \.ephemeralMapSizeMiB),
        .text("store.sync", "\"commit\": fsync every commit. \"interval\": fsync every store.syncIntervalMs in the background (nothing lost if a process dies; on power loss up to that window, and the store can be left corrupt: see the README).", .choice(["commit", "interval"]), \.sync),
        .int("store.syncIntervalMs", "With store.sync \"interval\": how long after a process's first unsynced commit its background sync runs.", 1...10_000, \.syncIntervalMs),
        .int("challenge.ttlSeconds", "How long a challenge stays valid.", 10...3600, \.challengeTTLSeconds),
        .int("challenge.usedRetentionSeconds", "How long a used challenge is remembered past its expiry (a wall clock stepping back by up to this much cannot revive it).", 0...86_400, \.usedChallengeRetentionSeconds),
        .text("tokens.issuer", "The iss claim of issued tokens.", .string, \.tokenIssuer),
        .int("tokens.lifetimeSeconds", "Token lifetime unless the app sets its own (at least 600: the iOS SDK renews 300 s before expiry).", Configuration.minimumTokenLifetimeSeconds...2_592_000, \.tokenLifetimeSeconds),
        .text("tokens.algorithm", "Signing algorithm for new keys: ES256 or RS256.", .choice(["ES256", "RS256"]), \.tokenAlgorithm),
        .text("tokens.audience", "The aud claim: \"appId\" (TEAMID.bundleId, what attestctl init writes) or \"bundle\" (the bundle ID alone, the hosted service's form and what a config.json without this key means: two teams' apps with one bundle ID then share an audience, so relying parties must check team_id too).", .choice(Configuration.tokenAudiences), \.tokenAudience),
        .int("tokens.rotationOverlapSeconds", "How long a rotated-out key stays in the JWKS after it stops signing.", 0...31_536_000, \.rotationOverlapSeconds),
        .int("tokens.publicationDelaySeconds", "How long 'keys rotate' publishes a new key in the JWKS before it signs (at least the JWKS max-age, 300 s; 'keys rotate --now' skips it).", 300...2_592_000, \.publicationDelaySeconds),
        ConfigurationKey(name: "trust.testRoots", doc: "PEM files of test CAs trusted besides Apple's root (test devices only; logged loudly).",
                         kind: .stringList, get: { .array($0.testRoots.map { .string($0) }) },
                         set: { c, v in c.testRoots = v.arrayValue!.map { $0.stringValue! } }),
        .int("rateLimits.validatePerIPPerMinute", "Validate requests per client IP per minute (0: no limit).", 0...1_000_000, \.validatePerIPPerMinute),
        .int("rateLimits.refreshPerIPPerMinute", "Refresh requests per client IP per minute (0: no limit).", 0...1_000_000, \.refreshPerIPPerMinute),
        .int("rateLimits.challengePerIPPerSecond", "Challenge requests per client IP per second, enforced by nginx (site.conf).", 1...1_000_000, \.challengePerIPPerSecond),
        .int("rateLimits.challengeBurst", "Challenge requests per client IP served at once above the rate (nginx burst; at least 1: nginx refuses burst=0).", 1...1_000_000, \.challengeBurst),
        ConfigurationKey(name: "compat.unknownKeyStatus", doc: "Refresh with an unknown keyId: 404 not_found (contract) or 409 reattest_required (the shipping SDK then re-attests by itself).",
                         kind: .integerChoice([404, 409]), get: { .int(Int64($0.unknownKeyStatus)) },
                         set: { c, v in c.unknownKeyStatus = Int(v.intValue!) }),
        ConfigurationKey(name: "compat.madLimitStatus", doc: "A new device over the monthly limit: 402 quota_exceeded (contract) or 429 with error \"mad_limit_exceeded\" (what the shipping SDK recognises).",
                         kind: .integerChoice([402, 429]), get: { .int(Int64($0.madLimitStatus)) },
                         set: { c, v in c.madLimitStatus = Int(v.intValue!) }),
        .int("heartbeat.intervalSeconds", "Seconds between heartbeats the server asks for (interval, nextHeartbeatSeconds).", 10...86_400, \.heartbeatIntervalSeconds),
        .int("usage.apiKeyDevicesPerMonth", "Devices an organization's API keys may report (heartbeat with deviceId) per month; a new one beyond it is 429 until the month ends (0: no cap). They are never billed: the cap bounds what a leaked key can write.", 0...100_000_000, \.apiKeyDevicesPerMonth),
        ConfigurationKey(name: "webhooks.allowPrivateDestinations", doc: "Lift the webhook SSRF guard: allow http:// and URLs on loopback, private, link-local or multicast addresses (tests with a local receiver; also 'attestctl serve --allow-private-webhooks').",
                         kind: .bool, get: { .bool($0.allowPrivateWebhookAddresses) },
                         set: { c, v in c.allowPrivateWebhookAddresses = v.boolValue! }),
        ConfigurationKey(name: "webhooks.queueEvents", doc: "Queue webhook events in the outbox (false: none at all, for deployments without webhooks).",
                         kind: .bool, get: { .bool($0.queueWebhookEvents) }, set: { c, v in c.queueWebhookEvents = v.boolValue! }),
        ConfigurationKey(name: "webhooks.retrySchedule", doc: "Seconds before each retry of a failed delivery (non-2xx, timeout, refused); after the last the delivery is marked failed.",
                         kind: .integerList(1...604_800), get: { .array($0.webhookRetrySchedule.map { .int(Int64($0)) }) },
                         set: { c, v in c.webhookRetrySchedule = v.arrayValue!.map { Int($0.intValue!) } }),
        .int("webhooks.timeoutSeconds", "Time limit of one delivery attempt (connect, send, answer).", 1...60, \.webhookTimeoutSeconds),
        .int("webhooks.concurrencyPerEndpoint", "Delivery attempts in flight to one endpoint at most (a slow endpoint holds no more than this).", 1...64, \.webhookConcurrencyPerEndpoint),
        .int("webhooks.maxConcurrentDeliveries", "Delivery attempts in flight in all (the sender's threads).", 1...256, \.webhookMaxConcurrent),
        .int("webhooks.concurrencyPerOrganization", "Delivery attempts in flight to one organization's endpoints at most, all together: slow endpoints of one organization leave the other threads to others (0: no limit).", 0...256, \.webhookConcurrencyPerOrganization),
        .int("webhooks.writesPerOrganizationPerMinute", "Changes (create, update, delete) one organization may make to its webhook endpoints per minute through the management API (more: 429 rate_limited; 0: no limit).", 0...1_000_000, \.webhookWritesPerOrganizationPerMinute),
        .int("webhooks.logRetentionDays", "Days a finished delivery (delivered, failed, skipped) stays in the log after it was created; the deliverer removes older ones (0: keep them until the endpoint is deleted).", 0...3_650, \.webhookLogRetentionDays),
        .int("webhooks.endpointsPerOrganization", "Webhook endpoints one organization may register (more: 429 store_quota_exceeded).", 1...10_000, \.webhookEndpointsPerOrganization),
        .int("webhooks.storedDeliveriesPerOrganization", "Webhook deliveries (pending and in the log) plus queued test events one organization may keep in the store: past it, its test events are 429 store_quota_exceeded and its other events are not stored (0: no limit; the README shows what it means for the map size).", 0...100_000_000, \.webhookStoredPerOrganization),
        .int("webhooks.testEventsPerEndpointPerMinute", "Test events (POST /api/v1/org/webhooks/:id/test) one endpoint may be sent per minute (more: 429 rate_limited; 0: no limit).", 0...1_000_000, \.webhookTestsPerEndpointPerMinute),
        .int("webhooks.testEventsPerOrganizationPerMinute", "Test events one organization may queue per minute, all its endpoints together (more: 429 rate_limited; 0: no limit).", 0...1_000_000, \.webhookTestsPerOrganizationPerMinute),
    ]

    public static func named(_ name: String) -> ConfigurationKey? { all.first { $0.name == name } }
}
