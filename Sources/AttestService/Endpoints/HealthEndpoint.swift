import AttestCore
import AttestStore
import FastCGI

/// `GET /healthz` (and `HEAD`): the load balancers' check, answered by the monitor pool.
///
/// ```
/// 200 {"status":"ok"}
/// 503 {"status":"fail","failing":["store","store_map","signing_key","pool_refresh",…]}
/// ```
/// 200 only when every `HealthCheck` passes; a 503 names the failing ones (`HealthVerdict`).
/// `HEAD` answers the same status without a body. The body holds only the fixed check names:
/// what a check found (a store's error text, how full a map is, which file is missing) goes
/// to the pool's log, once per worker each time the set of failing checks changes.
///
/// Cost: a worker runs the checks at most once per clock second (`cacheSeconds`) and answers
/// every other poll of that second from the verdict, so several balancers polling every
/// second cost each worker one run a second, whatever their number.
enum HealthEndpoint {
    /// How long (clock seconds) a worker reuses a verdict: polls within one second share a
    /// run. One second: a balancer polling every second sees a change at its next poll or
    /// the one after, well within the usual two or three failed polls before it acts.
    static let cacheSeconds: Int64 = 1
    /// What the signing check signs (nothing a token could be made of: no claims).
    static let probe = Array("attestedge healthz probe".utf8)

    static func health(_ request: Request, _ ctx: ServiceContext) -> Response {
        let verdict = current(ctx)
        let headers = [Header("Content-Type", "application/json"), Header("Cache-Control", "no-store")]
        return Response(status: verdict.status, headers: headers,
                        body: request.method == "HEAD" ? [] : Array(verdict.body.utf8))
    }

    /// The worker's verdict: the cached one while it is younger than `cacheSeconds`, else a
    /// fresh run of the checks (logged when the failing set changed).
    static func current(_ ctx: ServiceContext) -> HealthVerdict {
        let now = ctx.clock.now()
        let last = ctx.caches.healthVerdict
        if let last, now >= last.checkedAt, now < last.checkedAt + cacheSeconds { return last }
        let (failing, problems) = run(ctx, now: now)
        let verdict = HealthVerdict(failing: failing, checkedAt: now)
        if failing != (last?.failing ?? []) {
            if failing.isEmpty {
                ctx.log("healthz: every check passes again")
            } else {
                let names = failing.map(\.name).joined(separator: ",")
                ctx.log("healthz: failing \(names): \(problems.joined(separator: "; "))")
            }
        }
        ctx.caches.healthVerdict = verdict
        return verdict
    }

    /// Runs every check; returns the failing ones in `HealthCheck.all`'s order and, for the
    /// log only, what each found.
    static func run(_ ctx: ServiceContext, now: Timestamp) -> (failing: [HealthCheck], problems: [String]) {
        var found = [HealthCheck: String]()
        do {
            try storeAnswers(ctx)
        } catch {
            found[.store] = "store: \(error)"
        }
        if let full = fullMap(ctx.store, limitPercent: ctx.configuration.maxMapPercent) { found[.storeMap] = full }
        do {
            let signer = try SigningKeys.signer(ctx)
            guard !(try signer.key.sign(probe)).isEmpty else { throw ServiceError(.internalError, "empty signature") }
        } catch {
            found[.signingKey] = "signing key: \(error)"
        }
        if let sockets = ctx.poolSockets {
            for endpoint in HealthCheck.pools {
                if let problem = PoolProbe.problem(endpoint, sockets: sockets, metrics: ctx.metricsDirectory) {
                    found[.pool(endpoint)] = problem
                }
            }
        }
        let failing = HealthCheck.all.filter { found[$0] != nil }
        return (failing, failing.map { found[$0]! })
    }

    /// A cheap read through the store: the schema record, in a snapshot that waits for no sync.
    static func storeAnswers(_ ctx: ServiceContext) throws {
        try ctx.store.read(awaitDurable: false) { txn in
            _ = try txn.get(.meta, Array("schema".utf8))
            try ctx.faults.healthStoreRead?()
        }
    }

    /// What is wrong when an environment uses `limitPercent` of its map or more (`Store.usage`,
    /// the pages LMDB has reached); `nil` when none does, or the store has no map (PostgreSQL).
    static func fullMap(_ store: Store, limitPercent: Int) -> String? {
        let full = store.usage().filter { $0.used * 100 >= $0.mapSize * limitPercent }
        guard !full.isEmpty else { return nil }
        return full.map { usage in
            "the \(usage.environment.rawValue) map uses \(usage.used) of \(usage.mapSize) bytes "
                + "(health.maxMapPercent \(limitPercent))"
        }.joined(separator: "; ")
    }
}
