import AttestCore
import AttestStore
import FastCGI

/// The flag stream's auth subrequest (`/.attestedge/flags-auth`, internal in site.conf): nginx's
/// `auth_request` for `GET /api/v1/flags/stream` asks this before nchan subscribes the client.
///
/// ```
/// GET /.attestedge/flags-auth   (the client's headers; REQUEST_URI = /api/v1/flags/stream?environment=…)
/// ← 204, X-AttestEdge-Channel: TEAMID.bundle/<env>   an environment the app has
/// ← 204, X-AttestEdge-Channel: TEAMID.bundle/~empty  any other valid name: {"flags":{}}
///        X-AttestEdge-Holder: ~lineage/<hex digest> | ~key/<hex key id>   (with either)
/// ← 401 / 403 as FlagsAuth; 400 (bad environment), 503 … reach the client as nginx's 500
/// ```
/// nginx subscribes to both channels this names (`auth_request_set`), so every 2xx carries both
/// headers: without them nchan would wait on an empty channel id. The holder is the stream's
/// own (`FlagChannel.holder`): deleting it ends the stream when its device or key loses
/// standing. The environment comes from `REQUEST_URI` (the subrequest's own query string is
/// empty), parsed like the flags GET's.
///
/// Before answering, the channel is **primed**: when nchan holds no message for it (a fresh
/// channel, or any channel after `nginx -s reload`, which empties nchan's memory), or one stored
/// in or before the second of the app's last change (`FeatureFlagAppRecord.changedAt`: that
/// change's publish failed, or it was made on another host, possibly in the second this host
/// last published), the defaults are read from the store (not the worker's cache, which on
/// PostgreSQL may be a second old) and published, so the new subscriber gets them at once. A
/// failed prime is logged and does not refuse the stream (the next change or connect publishes
/// again). The caller's standing is read again after the prime, the last thing before the 204:
/// a revoke committed meanwhile deleted a holder channel nobody held yet, so it must be seen
/// here, leaving only the time nginx takes from this answer to nchan's subscribe.
enum FlagsStreamAuth {
    static let path = "/.attestedge/flags-auth"
    /// The header naming the channel to nginx.
    static let channelHeader = "X-AttestEdge-Channel"
    /// The header naming the stream's holder channel to nginx.
    static let holderHeader = "X-AttestEdge-Holder"

    static func authorize(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try FlagsEndpoint.requireGET(request)
        let uri = request.params["REQUEST_URI"] ?? ""
        let query = uri.firstIndex(of: "?").map { String(uri[uri.index(after: $0)...]) } ?? ""
        let environment = try FlagsEndpoint.environment(query: query)
        let now = ctx.clock.now()
        let caller = try FlagsAuth.caller(request, now: now, ctx)
        let version = ctx.store.durableVersion
        let (flags, changedAt, lineage) = try ctx.store.read { txn -> (CompiledFeatureFlags, Int64, LineageKey?) in
            var lineage: LineageKey?
            if case .token(let claims) = caller.credential {
                lineage = LineageKey.of(try FlagsAuth.standing(claims, app: caller.app.app, in: txn).device)
            }
            let flags = try FeatureFlagsCache.flags(caller.app, version: version, in: txn, ctx)
            return (flags, try txn.featureFlagApp(appID: caller.app.app.appID)?.changedAt.seconds ?? 0, lineage)
        }
        let appID = caller.app.app.appID
        let known = flags.hasEnvironment(environment)
        let channel = known ? FlagChannel.id(appID: appID, environment: environment) : FlagChannel.empty(appID: appID)
        if let sockets = ctx.poolSockets {
            prime(channel, environment: known ? environment : nil, changedAt: changedAt, appID: appID,
                  socket: FlagChannel.publishSocket(socketDirectory: sockets), ctx)
        }
        let holder: String
        switch caller.credential {
        case .token(let claims):
            // Again, after the prime's round trips (see above).
            _ = try ctx.store.read { txn in try FlagsAuth.standing(claims, app: caller.app.app, in: txn) }
            holder = FlagChannel.holder(lineage: lineage!)
        case .apiKey(let id, _):
            _ = try FlagsAuth.caller(request, now: now, ctx)
            holder = FlagChannel.holder(apiKeyID: id)
        }
        return Response(status: 204, headers: [Header(channelHeader, channel), Header(holderHeader, holder),
                                               Header("Cache-Control", "no-store")])
    }

    /// Publishes the channel's payload (`environment`'s defaults read from the store;
    /// `{"flags":{}}` for `~empty`, `environment` nil) when nchan stores no message for it, or
    /// one stored in or before `changedAt`'s second (`NchanPublisher.ChannelInfo.isStale`).
    /// After its publish it reads the generation once more and publishes again when it moved,
    /// since a change committed meanwhile may have published before this older payload
    /// overwrote it.
    static func prime(_ channel: String, environment: String?, changedAt: Int64, appID: String, socket: String,
                      _ ctx: ServiceContext) {
        /// The generation and the payload, read together.
        func current() throws -> (UInt64, [UInt8]) {
            try ctx.store.read { txn in
                let generation = try txn.featureFlagGeneration(appID: appID) ?? 0
                guard let environment else { return (generation, FlagStream.emptyAnswer) }
                let answers = try FlagStream.defaults(appID: appID, in: txn) ?? [:]
                return (generation, answers[environment] ?? FlagStream.emptyAnswer)
            }
        }
        do {
            let info = try NchanPublisher.channelInfo(socket: socket, channel: channel)
            // `~empty` always holds {"flags":{}}: only a missing message matters there.
            guard info.isStale(changedAt: environment == nil ? -1 : changedAt) else { return }
            let (generation, body) = try current()
            try NchanPublisher.publish(socket: socket, channel: channel, body: body)
            guard environment != nil else { return }
            let moved = try ctx.store.read { txn in try (txn.featureFlagGeneration(appID: appID) ?? 0) != generation }
            if moved { try NchanPublisher.publish(socket: socket, channel: channel, body: current().1) }
        } catch {
            ctx.log("flags-auth: priming \(channel): \(error) (the stream waits for the next change or connect)")
        }
    }
}
