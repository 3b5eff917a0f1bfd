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
///        X-AttestEdge-Holder: ~device/<deviceId> | ~key/<hex key id>   (with either)
/// ← 401 / 403 as FlagsAuth; 400 (bad environment), 503 … reach the client as nginx's 500
/// ```
/// nginx subscribes to both channels this names (`auth_request_set`), so every 2xx carries both
/// headers: without them nchan would wait on an empty channel id. The holder is the stream's
/// own (`FlagChannel.holder`): deleting it ends the stream when its device or key loses standing. The environment comes from
/// `REQUEST_URI` (the subrequest's own query string is empty), parsed like the flags GET's.
/// Before answering, the channel is **primed**: when nchan holds no message for it (a fresh
/// channel, or any channel after `nginx -s reload`, which empties nchan's memory), or one
/// stored before the app's last change (`FeatureFlagAppRecord.changedAt`: that change's publish
/// failed), the current defaults are published, so the new subscriber gets them at once. A
/// failed prime is logged and does not refuse the stream (the next change or connect publishes
/// again).
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
        let (flags, changedAt) = try ctx.store.read { txn -> (CompiledFeatureFlags, Int64) in
            if case .token(let claims) = caller.credential {
                _ = try FlagsAuth.device(claims, app: caller.app.app, in: txn)
            }
            let flags = try FeatureFlagsCache.flags(caller.app, version: version, in: txn, ctx)
            return (flags, try txn.featureFlagApp(appID: caller.app.app.appID)?.changedAt.seconds ?? 0)
        }
        let appID = caller.app.app.appID
        let known = flags.hasEnvironment(environment)
        let channel = known ? FlagChannel.id(appID: appID, environment: environment) : FlagChannel.empty(appID: appID)
        if let sockets = ctx.poolSockets {
            prime(channel, environment: known ? environment : nil, flags: flags, changedAt: changedAt,
                  app: caller.app, socket: FlagChannel.publishSocket(socketDirectory: sockets), ctx)
        }
        let holder: String
        switch caller.credential {
        case .token(let claims): holder = FlagChannel.holder(deviceID: claims.deviceID)
        case .apiKey(let id, _): holder = FlagChannel.holder(apiKeyID: id)
        }
        return Response(status: 204, headers: [Header(channelHeader, channel), Header(holderHeader, holder),
                                               Header("Cache-Control", "no-store")])
    }

    /// Publishes the channel's payload (`environment`'s defaults; `{"flags":{}}` for `~empty`,
    /// `environment` nil) when nchan stores no message for it, or one older than `changedAt`'s
    /// second (`FeatureFlagAppRecord.changedAt`): a change whose own publish failed. After its
    /// publish it reads the generation once more and publishes again when it moved, since a
    /// change committed meanwhile may have published before this older payload overwrote it.
    static func prime(_ channel: String, environment: String?, flags: CompiledFeatureFlags, changedAt: Int64,
                      app: AppContext, socket: String, _ ctx: ServiceContext) {
        func body(_ flags: CompiledFeatureFlags) -> [UInt8] {
            guard let environment, flags.hasEnvironment(environment) else { return FlagStream.emptyAnswer }
            return flags.defaultsAnswer(environment: environment)
        }
        do {
            let info = try NchanPublisher.channelInfo(socket: socket, channel: channel)
            // `~empty` always holds {"flags":{}}: only a missing message matters there.
            guard info.isStale(changedAt: environment == nil ? 0 : changedAt) else { return }
            try NchanPublisher.publish(socket: socket, channel: channel, body: body(flags))
            guard environment != nil else { return }
            let version = ctx.store.durableVersion
            let newer = try ctx.store.read { txn -> CompiledFeatureFlags? in
                guard try (txn.featureFlagGeneration(appID: app.app.appID) ?? 0) != flags.generation else { return nil }
                return try FeatureFlagsCache.flags(app, version: version, in: txn, ctx)
            }
            if let newer { try NchanPublisher.publish(socket: socket, channel: channel, body: body(newer)) }
        } catch {
            ctx.log("flags-auth: priming \(channel): \(error) (the stream waits for the next change or connect)")
        }
    }
}
