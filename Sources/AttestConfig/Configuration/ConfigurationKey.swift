import AttestCore

/// One documented configuration key: its dotted name, what it means, its type and range, and
/// how it reads and writes a `Configuration`. `all` is the one place a key is described:
/// `attestctl config show` prints it and docs/configuration.md is rendered from it
/// (`ConfigurationReference`).
public struct ConfigurationKey: Sendable {
    public enum Kind: Sendable {
        case integer(ClosedRange<Int>)
        /// A whole number from a short list (HTTP statuses of a compatibility switch).
        case integerChoice([Int])
        case string
        /// A string that may be empty (a setting that is off until set).
        case optionalString
        /// Empty, or `https://HOST[:PORT][/PATH]`: no user info, query, fragment, space or
        /// control character (a URL a secret is sent to: never another scheme).
        case optionalHTTPSURL
        case choice([String])
        case bool
        case stringList
        /// An array of whole numbers, each in the range, at most 16.
        case integerList(ClosedRange<Int>)
    }

    public let name: String
    public let doc: String
    public let kind: Kind

    /// `https://HOST[:PORT][/PATH]` with a host of letters, digits, `.`, `-` (or a bracketed
    /// IPv6 address) and a path of unreserved characters and `/` (`.optionalHTTPSURL`).
    static func isHTTPSURL(_ s: String) -> Bool {
        guard s.hasPrefix("https://"), s.utf8.count <= 512 else { return false }
        let rest = s.dropFirst("https://".count)
        let authority = rest.prefix { $0 != "/" }, path = rest.dropFirst(authority.count)
        var host = Substring(authority), port: Substring = ""
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty { guard after.hasPrefix(":") else { return false }; port = after.dropFirst() }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return false }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                port = authority[authority.index(after: colon)...]
                guard !port.isEmpty else { return false }
            }
            let hostCharacter = { (c: Character) in (c.isASCII && (c.isLetter || c.isNumber)) || c == "." || c == "-" }
            guard !host.isEmpty, host.allSatisfy(hostCharacter) else { return false }
        }
        if !port.isEmpty { guard let n = Int(port), (1...65_535).contains(n) else { return false } }
        return path.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/-._~".contains($0)) }
    }
    package let get: @Sendable (Configuration) -> JSONValue
    package let set: @Sendable (inout Configuration, JSONValue) -> Void

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
        case .optionalHTTPSURL:
            guard let s = value.stringValue else { return "must be a string" }
            guard s.isEmpty || Self.isHTTPSURL(s) else {
                return "must be empty or https://HOST[:PORT][/PATH] (no user, query, fragment or space)"
            }
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
            let inRange = { (n: Int64) in n >= Int64(range.lowerBound) && n <= Int64(range.upperBound) }
            guard let items = value.arrayValue, items.count <= 16,
                  items.allSatisfy({ $0.intValue.map(inRange) ?? false }) else {
                return "must be an array of at most 16 whole numbers in \(range.lowerBound)...\(range.upperBound)"
            }
        }
        return nil
    }

    /// A key over the stored property at `keyPath`; `problem(with:)` has checked what `set` gets.
    static func key<Value>(_ name: String, _ kind: Kind, _ keyPath: WritableKeyPath<Configuration, Value>,
                           _ doc: String,
                           get: @escaping @Sendable (Value) -> JSONValue,
                           set: @escaping @Sendable (JSONValue) -> Value) -> ConfigurationKey {
        nonisolated(unsafe) let path = keyPath  // key paths to stored properties of a value type are immutable
        return ConfigurationKey(name: name, doc: doc, kind: kind, get: { get($0[keyPath: path]) },
                                set: { $0[keyPath: path] = set($1) })
    }

    static func int(_ name: String, _ range: ClosedRange<Int>, _ keyPath: WritableKeyPath<Configuration, Int>,
                    _ doc: String) -> ConfigurationKey {
        key(name, .integer(range), keyPath, doc, get: { .int(Int64($0)) }, set: { Int($0.intValue!) })
    }

    static func status(_ name: String, _ options: [Int], _ keyPath: WritableKeyPath<Configuration, Int>,
                       _ doc: String) -> ConfigurationKey {
        key(name, .integerChoice(options), keyPath, doc, get: { .int(Int64($0)) }, set: { Int($0.intValue!) })
    }

    static func text(_ name: String, _ kind: Kind = .string, _ keyPath: WritableKeyPath<Configuration, String>,
                     _ doc: String) -> ConfigurationKey {
        key(name, kind, keyPath, doc, get: { .string($0) }, set: { $0.stringValue! })
    }

    /// A choice-valued key: the allowed spellings are the enum's raw values.
    static func choice<Value: RawRepresentable & CaseIterable>(
        _ name: String, _ keyPath: WritableKeyPath<Configuration, Value>, _ doc: String
    ) -> ConfigurationKey where Value.RawValue == String {
        key(name, .choice(Value.allCases.map(\.rawValue)), keyPath, doc,
            get: { .string($0.rawValue) }, set: { Value(rawValue: $0.stringValue!)! })
    }

    static func flag(_ name: String, _ keyPath: WritableKeyPath<Configuration, Bool>,
                     _ doc: String) -> ConfigurationKey {
        key(name, .bool, keyPath, doc, get: { .bool($0) }, set: { $0.boolValue! })
    }

    static func texts(_ name: String, _ keyPath: WritableKeyPath<Configuration, [String]>,
                      _ doc: String) -> ConfigurationKey {
        key(name, .stringList, keyPath, doc, get: { .array($0.map { .string($0) }) },
            set: { $0.arrayValue!.map { $0.stringValue! } })
    }

    static func ints(_ name: String, _ range: ClosedRange<Int>, _ keyPath: WritableKeyPath<Configuration, [Int]>,
                     _ doc: String) -> ConfigurationKey {
        key(name, .integerList(range), keyPath, doc, get: { .array($0.map { .int(Int64($0)) }) },
            set: { $0.arrayValue!.map { Int($0.intValue!) } })
    }

    /// Every key, in the order `attestctl config show` and docs/configuration.md list them.
    public static let all: [ConfigurationKey] = [
        .text("server.listen", .string, \.listen, """
            Address nginx listens on: HOST:PORT, HOST an IPv4 address, [IPv6], a host name or *, optionally \
            followed by " reuseport"; nothing else is accepted (root writes it into nginx's configuration, so \
            'config set', start-up and the renderer all refuse any other form with a message naming the key; \
            see ListenAddress).
            """),
        .text("server.metricsListen", .string, \.metricsListen, """
            Address of the second nginx server, which serves only GET /metrics (Prometheus text format, \
            from the monitor pool): same grammar as server.listen, and another socket than it (another port, \
            or two different hosts, neither *, 0.0.0.0 nor [::]; compared as addresses, not text). Loopback by \
            default; expose it to a scraper only on a private network (the numbers name organizations).
            """),
        .int("server.workers", 1...64, \.workers, "Worker processes per endpoint pool."),
        .int("server.bodyLimitBytes", 1024...1_048_576, \.bodyLimitBytes, """
            Largest request body accepted (larger: 413 payload_too_large); the nginx site also caps bodies \
            at 64 KiB.
            """),
        .text("server.user", .string, \.serviceUser, """
            Unprivileged user nginx and the pools run as when attestctl serve starts as root ("attestedge" \
            is created if missing). Once the data directory belongs to an account, naming another here (root \
            included) is refused: attestctl serve --user NAME chooses. 1 to 32 ASCII letters, digits, _, - \
            or . (not - first).
            """),
        .choice("server.requestLog", \.requestLog, """
            "errors": the pools log one line per refused request (ENDPOINT requestId= status= code= us= \
            detail=). "all": one line per request, successes too (host installs, where journald is then the \
            request log).
            """),
        .int("server.keyCacheEntries", 0...1_000_000, \.keyCacheEntries, """
            Parsed device keys each worker keeps for refresh, about 3 KB each (OpenSSL's key and verify \
            context), so about 30 MB per refresh worker when full; when full the cache starts again empty. A \
            key not in the cache costs about 15 µs more (a P-256 verify is 80–120 µs on the development box); \
            0 parses the key on every refresh.
            """),
        .int("server.tokenCacheEntries", 0...10_000_000, \.tokenCacheEntries, """
            Heartbeat tokens each worker remembers as verified: a device sends the same token with every \
            heartbeat (every 120 s) until it refreshes, and only its first heartbeat at each worker checks the \
            signature (four fifths of a heartbeat's cost); the expiry, the app, the device (revoked is \
            refused) and the key are checked on every heartbeat, and a key leaving jwks.json empties the set. \
            Two tables of half the entries each, 8.4 MB per worker when full; a token unused while half the \
            capacity of others arrive is forgotten and checked again. 0 checks every signature.
            """),
        .int("server.maxHeldAnswers", 1...64, \.maxHeldAnswers, """
            Answers a pool worker holds while it serves queued requests (with store.sync "commit", until \
            their commit reaches the disk), and so the largest group of validate and refresh writes committed \
            together (with one commit and, in commit mode, one sync: see docs/storage.md). Lower trades \
            commits, and so throughput, for tail latency; 1 holds none.
            """),
        .int("server.logMaxMiB", 1...65_536, \.logMaxMiB, """
            attestctl serve rotates each log in DATA/log past this size, keeping one previous file (NAME.1); \
            a pool's log copied to NAME.1 keeps its newest logMaxMiB (what it held before them is dropped).
            """),
        .choice("store.backend", \.storeBackend, """
            "lmdb": the embedded store under the data directory, one host. "postgres": a PostgreSQL-protocol \
            database shared by several hosts (store.postgres.url; run 'attestctl store migrate'; see \
            docs/several-hosts.md).
            """),
        .text("store.postgres.url", .optionalString, \.postgresURL, """
            libpq connection string or URI of the shared database, e.g. "host=db1 dbname=attestedge \
            user=attestedge"; keep passwords in ~/.pgpass or passfile=, not in config.json.
            """),
        .int("store.postgres.maxRetries", 0...1000, \.postgresMaxRetries, """
            How many times a transaction that lost a serialization conflict (to another host or worker) runs \
            again. A run after 3 lost conflicts, and the last one, runs alone (every other writer held off), \
            so conflicts alone do not end in 503.
            """),
        .int("store.durableMapSizeMiB", 1...1_048_576, \.durableMapSizeMiB, """
            Size limit of the durable LMDB environment (devices, apps…; how to size it: docs/storage.md, \
            "Map size").
            """),
        .int("store.ephemeralMapSizeMiB", 1...65_536, \.ephemeralMapSizeMiB, """
            Size limit of the ephemeral LMDB environment (used challenges, rate windows). On ext4, XFS and \
            tmpfs the whole map is reserved on disk when the store opens, and its commits store through \
            memory instead of pwrite (where it cannot be reserved, it writes with pwrite).
            """),
        .choice("store.sync", \.sync, """
            "commit": every answer waits for an fdatasync that covers what it wrote or read (group commit \
            across processes). "interval": commit without fsync, a background sync every store.syncIntervalMs; \
            nothing is lost if a process dies, but a power cut loses up to that window and can leave the store \
            corrupt (see docs/storage.md).
            """),
        .int("store.syncIntervalMs", 1...10_000, \.syncIntervalMs, """
            With store.sync "interval": how long after a process's first unsynced commit its background sync \
            runs (none while it writes nothing; one process's sync spares the others theirs).
            """),
        .int("challenge.ttlSeconds", 10...3600, \.challengeTTLSeconds, "How long a challenge stays valid."),
        .int("challenge.usedRetentionSeconds", 0...86_400, \.challengeUsedRetentionSeconds, """
            How long a used challenge is remembered past its expiry (a wall clock stepping back by up to this \
            much cannot revive it).
            """),
        .text("tokens.issuer", .string, \.tokenIssuer, "The iss claim of issued tokens."),
        .int("tokens.lifetimeSeconds", Configuration.minimumTokenLifetimeSeconds...2_592_000,
             \.tokenLifetimeSeconds, """
            Token lifetime unless the app sets its own (at least 600: the iOS SDK renews 300 s before expiry).
            """),
        .choice("tokens.algorithm", \.tokenAlgorithm, "Signing algorithm of new keys: ES256 or RS256."),
        .choice("tokens.audience", \.tokenAudience, """
            The aud claim: "appId" (TEAMID.bundleId, what attestctl init writes for a new data directory) or \
            "bundle" (the bundle ID alone, the hosted service's form and what a config.json without this key \
            means: two teams' apps with one bundle ID then share an audience, so relying parties must check \
            team_id too). See docs/tokens.md.
            """),
        .int("tokens.rotationOverlapSeconds", 0...31_536_000, \.rotationOverlapSeconds, """
            How long a rotated-out key stays in the JWKS after it stops signing ('keys rotate' keeps it for \
            the longest token lifetime in use if that is longer).
            """),
        .int("tokens.publicationDelaySeconds", 300...2_592_000, \.publicationDelaySeconds, """
            How long 'keys rotate' publishes a new key in the JWKS before it signs (at least the JWKS max-age, \
            300 s; 'keys rotate --now' skips it).
            """),
        .texts("trust.testRoots", \.testRoots, """
            PEM files of test CAs trusted besides Apple's root: test devices only, logged loudly at start; \
            trusted for every organization's apps (see docs/api.md, "Test roots").
            """),
        .texts("trust.testReceiptRoots", \.testReceiptRoots, """
            PEM files of test receipt roots trusted besides Apple Root CA - G3, only for the receipts of devices \
            whose attestation a test root verified ('init --test-ca' lists test-ca/receipt-root.pem).
            """),
        .int("rateLimits.validatePerIPPerMinute", 0...1_000_000, \.validatePerIPPerMinute, """
            Validate requests per client IP per minute (0: no limit); IPv6 clients count per /64.
            """),
        .int("rateLimits.refreshPerIPPerMinute", 0...1_000_000, \.refreshPerIPPerMinute, """
            Refresh requests per client IP per minute (0: no limit); IPv6 clients count per /64.
            """),
        .int("rateLimits.challengePerIPPerSecond", 1...1_000_000, \.challengePerIPPerSecond, """
            Challenge requests per client IP per second, enforced by nginx (rendered into site.conf); IPv6 \
            clients count per /64, like the pools' limits.
            """),
        .int("rateLimits.challengeBurst", 1...1_000_000, \.challengeBurst, """
            Challenge requests per client IP served at once above the rate (nginx burst; at least 1: nginx \
            refuses burst=0 and would not start).
            """),
        .status("compat.unknownKeyStatus", [404, 409], \.unknownKeyStatus, """
            Refresh with an unknown keyId: 404 not_found (contract) or 409 reattest_required (the shipping \
            SDK then re-attests by itself).
            """),
        .status("compat.madLimitStatus", [402, 429], \.madLimitStatus, """
            A new device over the monthly limit: 402 quota_exceeded (contract) or 429 with error \
            "mad_limit_exceeded" (what the shipping SDK recognises, as its limitExceeded error).
            """),
        .int("heartbeat.intervalSeconds", 10...86_400, \.heartbeatIntervalSeconds, """
            Seconds between heartbeats the server asks for (heartbeat's interval and nextHeartbeatSeconds).
            """),
        .int("flags.keepaliveSeconds", 5...60, \.flagStreamKeepaliveSeconds, """
            Seconds between the flag stream's ': keepalive' comments (nginx's nchan; rendered into site.conf). \
            The SDK gives up on a stream silent for 75 s.
            """),
        .int("flags.streamMaxSeconds", 5...3_600, \.flagStreamMaxSeconds, """
            Seconds a flag stream stays open before nginx closes it (nchan_subscriber_timeout, rendered into \
            site.conf). The SDK reconnects after 1 s and the reconnect is authorised again, so an expired token, or \
            a revocation this host's nginx did not hear of (made on another host), loses its open stream within \
            this time; a revoke, block or invalidation on this host ends the stream at once. Each stream costs one \
            auth subrequest per period.
            """),
        .int("flags.streamMemoryMiB", 8...4096, \.flagStreamMemoryMiB, """
            nchan's shared memory for the flag stream's channels and their stored message, in MiB \
            (nchan_shared_memory_size, rendered into site.conf; connections do not use it).
            """),
        .int("whatsNew.maxNotes", 1...100, \.whatsNewMaxNotes, """
            Most release notes in one GET /api/v1/whats-new answer, newest version first.
            """),
        .int("health.maxMapPercent", 1...100, \.maxMapPercent, """
            GET /healthz fails its store_map check (503) once an LMDB environment, durable or ephemeral, uses \
            this percentage of its map or more (the pages LMDB has reached, as attestctl store stats counts \
            them). PostgreSQL has no map: the check always passes there. See docs/operations.md, "Health".
            """),
        .int("usage.apiKeyDevicesPerMonth", 0...100_000_000, \.apiKeyDevicesPerMonth, """
            Devices an organization's API keys may report (heartbeat with deviceId) per month; a new one \
            beyond it is 429 until the month ends (0: no cap). They are never billed: the cap bounds what a \
            leaked key can write.
            """),
        .flag("webhooks.allowPrivateDestinations", \.webhookAllowPrivateDestinations, """
            Lift the webhook SSRF guard: allow http:// and URLs on loopback, private, link-local or multicast \
            addresses (tests with a local receiver; 'attestctl serve --allow-private-webhooks' does it for one \
            run). Replaces the earlier webhooks.allowPrivateAddresses, which is gone (a config.json naming it \
            is refused at start, naming it).
            """),
        .flag("webhooks.queueEvents", \.webhookQueueEvents, """
            Queue webhook events in the outbox (false: none at all, for deployments without webhooks).
            """),
        .ints("webhooks.retrySchedule", 1...604_800, \.webhookRetrySchedule, """
            Seconds before each retry of a failed delivery (non-2xx, timeout, refused; due times are whole \
            seconds: up to 1 s sooner); after the last the delivery is marked failed.
            """),
        .int("webhooks.timeoutSeconds", 1...60, \.webhookTimeoutSeconds, """
            Time limit of one delivery attempt in all (connect, send, answer).
            """),
        .int("webhooks.concurrencyPerEndpoint", 1...64, \.webhookConcurrencyPerEndpoint, """
            Delivery attempts in flight to one endpoint at most (a slow endpoint holds no more than this).
            """),
        .int("webhooks.maxConcurrentDeliveries", 1...256, \.webhookMaxConcurrentDeliveries, """
            Delivery attempts in flight in all (the sender's threads).
            """),
        .int("webhooks.concurrencyPerOrganization", 0...256, \.webhookConcurrencyPerOrganization, """
            Delivery attempts in flight to one organization's endpoints at most, all together: slow endpoints \
            of one organization leave the other threads to others (0: no limit).
            """),
        .int("webhooks.writesPerOrganizationPerMinute", 0...1_000_000, \.webhookWritesPerOrganizationPerMinute, """
            Changes (create, update, delete) one organization may make to its webhook endpoints per minute \
            through the management API (more: 429 rate_limited; 0: no limit).
            """),
        .int("flags.writesPerOrganizationPerMinute", 0...1_000_000, \.flagWritesPerOrganizationPerMinute, """
            Changes one organization may make to its feature flags, flag environments and release notes per \
            minute through the org API (more: 429 rate_limited; 0: no limit). attestctl is not limited.
            """),
        .int("feedback.requestsPerDevicePerDay", 0...1_000_000, \.feedbackRequestsPerDevicePerDay, """
            Feature requests one device (its lineage, or an API key's client) may submit per UTC day \
            (more: 429 rate_limited with Retry-After; 0: no limit).
            """),
        .int("feedback.votesPerDevicePerHour", 0...1_000_000, \.feedbackVotesPerDevicePerHour, """
            Votes and vote removals one device may make per clock hour (0: no limit).
            """),
        .int("feedback.commentsPerDevicePerHour", 0...1_000_000, \.feedbackCommentsPerDevicePerHour, """
            Comments on feature requests one device may post per clock hour (0: no limit).
            """),
        .int("feedback.ticketsPerDevicePerDay", 0...1_000_000, \.feedbackTicketsPerDevicePerDay, """
            Support tickets one device may open per UTC day (0: no limit).
            """),
        .int("feedback.messagesPerDevicePerHour", 0...1_000_000, \.feedbackMessagesPerDevicePerHour, """
            Replies to its support tickets one device may send per clock hour (0: no limit).
            """),
        .text("console.url", .optionalString, \.consoleURL, """
            Where people reach this server, e.g. https://attest.example.com: the start of the sign-in links \
            attestctl console login prints. Empty: the server's own address (server.listen, with https and the \
            domain when the site has one). The console needs HTTPS except on loopback (browsers keep its \
            Secure cookie from loopback or HTTPS only).
            """),
        .int("console.loginMinutes", 1...1_440, \.consoleLoginMinutes, """
            Minutes a console sign-in link stays usable (once).
            """),
        .int("console.sessionHours", 1...720, \.consoleSessionHours, """
            Hours a console session lasts after its sign-in (attestctl console logout ends it sooner).
            """),
        .int("console.auditRetentionDays", 1...36_500, \.consoleAuditRetentionDays, """
            Days an organization's audit log keeps an entry; older ones are dropped as new ones are written.
            """),
        .int("console.auditEntriesPerOrganization", 1_000...100_000_000, \.consoleAuditEntriesPerOrganization, """
            Entries an organization's audit log keeps at most; past it each new entry drops the oldest ones \
            (whatever their age).
            """),
        .int("org.writesPerOrganizationPerMinute", 0...1_000_000, \.orgWritesPerOrganizationPerMinute, """
            Changes one organization may make per minute through the org API to devices (flag, block, clear, \
            revoke), API keys and feature requests and tickets (status, replies, merges) (more: 429 \
            rate_limited; 0: no limit). attestctl is not limited.
            """),
        .int("org.apiKeysPerOrganization", 1...100_000, \.orgAPIKeysPerOrganization, """
            Active API keys one organization may hold (creating more through the org API: 429 \
            store_quota_exceeded; attestctl apikey create is not limited); revoked keys count against ten \
            times as many.
            """),
        .int("webhooks.logRetentionDays", 0...3_650, \.webhookLogRetentionDays, """
            Days a finished delivery (delivered, failed, skipped) stays in the log after it was created; the \
            deliverer removes older ones (0: keep them until the endpoint is deleted).
            """),
        .int("webhooks.endpointsPerOrganization", 1...10_000, \.webhookEndpointsPerOrganization, """
            Webhook endpoints one organization may register (more: 429 store_quota_exceeded).
            """),
        .int("webhooks.storedDeliveriesPerOrganization", 0...100_000_000, \.webhookStoredDeliveriesPerOrganization, """
            Webhook deliveries (pending and in the log) plus queued test events one organization may keep in \
            the store: past it, its test events are 429 store_quota_exceeded and its other events are not \
            stored (0: no limit). What it means for the map size: docs/webhooks.md, "Quotas".
            """),
        .int("webhooks.testEventsPerEndpointPerMinute", 0...1_000_000, \.webhookTestEventsPerEndpointPerMinute, """
            Test events (POST /api/v1/org/webhooks/:id/test) one endpoint may be sent per minute (more: 429 \
            rate_limited; 0: no limit).
            """),
        .int("webhooks.testEventsPerOrganizationPerMinute", 0...1_000_000,
             \.webhookTestEventsPerOrganizationPerMinute, """
            Test events one organization may queue per minute, all its endpoints together (more: 429 \
            rate_limited; 0: no limit).
            """),
        .int("receipts.seenWithinDays", 1...90, \.receiptSeenWithinDays, """
            attest-receipts redeems the receipts of devices seen (validate, refresh) within this many days; \
            others wait an interval and are looked at again.
            """),
        .int("receipts.intervalHours", 1...2_160, \.receiptIntervalHours, """
            Hours between two redemptions of one device's receipt, at least (never before the receipt's \
            not-before, never after its expiry).
            """),
        .int("receipts.firstDelaySeconds", 1...86_400, \.receiptFirstDelaySeconds, """
            Seconds after attestation before the first redemption; also the first backoff after a 429, 5xx or \
            transport error (doubling on each failure in a row, at most receipts.intervalHours, plus up to a \
            quarter at random).
            """),
        .int("receipts.requestsPerSecond", 1...1_000, \.receiptRequestsPerSecond, """
            Requests attest-receipts sends to Apple per second at most, all teams together.
            """),
        .text("receipts.appleURL", .optionalHTTPSURL, \.receiptAppleURL, """
            Base URL of Apple's App Attest data endpoint (requests go to <url>/v1/attestationData). Empty: \
            Apple's hosts by the receipt's environment (data-development.appattest.apple.com for sandbox, \
            data.appattest.apple.com for production). Only tests set it (a local stand-in).
            """),
        .text("receipts.appleCAFile", .optionalString, \.receiptAppleCAFile, """
            PEM file of the CA certificates Apple's endpoint must chain to. Empty: the system's CAs. Only tests \
            set it (the stand-in's test CA).
            """),
        .text("receipts.authorizationPrefix", .optionalString, \.receiptAuthorizationPrefix, """
            Text sent before the provider token in the Authorization header. Empty: the JWT alone, as Apple's \
            example shows; "Bearer " if Apple turns out to want it (see README, known unknowns).
            """),
    ]

    public static func named(_ name: String) -> ConfigurationKey? { all.first { $0.name == name } }
}
