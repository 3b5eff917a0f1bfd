import AttestMetrics
import AttestStore
import FastCGI

/// `GET /metrics` on the metrics listener (`server.metricsListen`): Prometheus's text format
/// 0.0.4 (`MetricsExposition`, docs/metrics.md). Counters come from every pool's segment in
/// `RUN/metrics` (`ServiceMetrics.snapshots`); whether each pool takes connections is probed now
/// (`PoolProbe`, as `/healthz` does); the store's map usage, the webhook backlog and
/// each organization's monthly active devices are read from the store now, in one read
/// transaction that waits for no sync; nchan's flag stream gauges from its stub status on the
/// publisher socket. A store that does not answer that read (PostgreSQL down,
/// an I/O error) leaves its gauges out and sets `attestedge_store_up` 0: the counters, the
/// pools and the clock are still exposed (they are what says what failed). No label names a
/// device, a key, an address or an app; organizations are named (the only tenant label: one
/// series per organization).
enum MetricsEndpoint {
    static func metrics(_ request: Request, _ ctx: ServiceContext) -> Response {
        let text = MetricsExposition.render(ServiceMetrics.snapshots(), gauges(ctx))
        return Response(status: 200, headers: [Header("Content-Type", MetricsExposition.contentType),
                                               Header("Cache-Control", "no-store")],
                        body: Array(text.utf8))
    }

    static func gauges(_ ctx: ServiceContext) -> ScrapeGauges {
        let now = ctx.clock.now()
        let month = now.monthKey
        let read = Result { try ctx.store.read(awaitDurable: false) { txn in
            try ctx.faults.scrapeStoreRead?()
            let backlog = try txn.count(.outbox) + txn.count(.deliveryDue)
            let receipts = try txn.dueReceipts(at: now, limit: ScrapeGauges.receiptBacklogCap).count
            let organizations = try txn.orgs().map { org in
                (name: org.name, active: try txn.usageMonthReport(org: org.name, month: month)?.activeDevices ?? 0,
                 limit: org.madLimit)
            }
            return (backlog, receipts, organizations)
        } }
        // The maps are the environments' own files (`Store.usage`), not the read's: kept either way.
        let storeMaps = ctx.store.usage().map { ($0.environment.rawValue, $0.used, $0.mapSize) }
        let time = Double(now.seconds)
        let stream = flagStream(ctx)
        guard case .success(let (backlog, receipts, organizations)) = read else {
            return ScrapeGauges(storeMaps: storeMaps, webhookBacklog: nil, receiptBacklog: nil, time: time,
                                poolsUp: poolsUp(ctx), storeUp: false, flagStreamUp: stream.up,
                                flagStream: stream.gauges)
        }
        return ScrapeGauges(storeMaps: storeMaps, webhookBacklog: backlog, receiptBacklog: receipts,
                            organizations: organizations, time: time, poolsUp: poolsUp(ctx), storeUp: true,
                            flagStreamUp: stream.up, flagStream: stream.gauges)
    }

    /// nchan's status from the flag stream's publisher socket (`NchanStubStatus`): up with its
    /// gauges, or down (no socket, no answer within `NchanPublisher.timeoutMilliseconds`, not
    /// nchan's status: logged) with none; neither in process (no socket directory, no nginx).
    static func flagStream(_ ctx: ServiceContext) -> (up: Bool?, gauges: FlagStreamGauges?) {
        guard let sockets = ctx.poolSockets else { return (nil, nil) }
        do {
            return (true, try NchanStubStatus.read(socket: FlagChannel.publishSocket(socketDirectory: sockets)))
        } catch {
            ctx.log("metrics: flag stream: \(error)")
            return (false, nil)
        }
    }

    /// Each pool up (`PoolProbe`, as `/healthz` judges it) or down now; none in process
    /// (`ServiceContext.poolSockets` unset: no pools to probe).
    static func poolsUp(_ ctx: ServiceContext) -> [(pool: String, up: Bool)] {
        guard let sockets = ctx.poolSockets else { return [] }
        return Endpoint.allCases.map {
            ($0.rawValue, PoolProbe.problem($0, sockets: sockets, metrics: ctx.metricsDirectory) == nil)
        }
    }
}
