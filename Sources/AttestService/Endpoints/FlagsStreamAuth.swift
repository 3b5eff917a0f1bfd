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
/// ← 401 / 403 as FlagsAuth; 400 (bad environment), 503 … reach the client as nginx's 500
/// ```
/// nginx subscribes to the channel this names (`auth_request_set`), so every 2xx carries the
/// header: without it nchan would wait on an empty channel id. The environment comes from
/// `REQUEST_URI` (the subrequest's own query string is empty), parsed like the flags GET's.
/// Before answering, the channel is **primed**: when nchan holds no message for it (a fresh
/// channel, or any channel after `nginx -s reload`, which empties nchan's memory), the current
/// defaults are published, so the new subscriber gets them at once. A failed prime is logged
/// and does not refuse the stream (the next change or connect publishes again).
enum FlagsStreamAuth {
    static let path = "/.attestedge/flags-auth"
    /// The header naming the channel to nginx.
    static let channelHeader = "X-AttestEdge-Channel"

    static func authorize(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try FlagsEndpoint.requireGET(request)
        let uri = request.params["REQUEST_URI"] ?? ""
        let query = uri.firstIndex(of: "?").map { String(uri[uri.index(after: $0)...]) } ?? ""
        let environment = try FlagsEndpoint.environment(query: query)
        let now = ctx.clock.now()
        let caller = try FlagsAuth.caller(request, now: now, ctx)
        let version = ctx.store.durableVersion
        let flags = try ctx.store.read { txn -> CompiledFeatureFlags in
            if case .token(let claims) = caller.credential {
                _ = try FlagsAuth.device(claims, app: caller.app.app, in: txn)
            }
            return try FeatureFlagsCache.flags(caller.app, version: version, in: txn, ctx)
        }
        let appID = caller.app.app.appID
        let known = flags.hasEnvironment(environment)
        let channel = known ? FlagChannel.id(appID: appID, environment: environment) : FlagChannel.empty(appID: appID)
        if let sockets = ctx.poolSockets {
            prime(channel, body: known ? flags.defaultsAnswer(environment: environment) : FlagStream.emptyAnswer,
                  socket: FlagChannel.publishSocket(socketDirectory: sockets), ctx)
        }
        return Response(status: 204, headers: [Header(channelHeader, channel), Header("Cache-Control", "no-store")])
    }

    /// Publishes `body` to `channel` when nchan stores no message for it.
    static func prime(_ channel: String, body: [UInt8], socket: String, _ ctx: ServiceContext) {
        do {
            if try NchanPublisher.messages(socket: socket, channel: channel) == 0 {
                try NchanPublisher.publish(socket: socket, channel: channel, body: body)
            }
        } catch {
            ctx.log("flags-auth: priming \(channel): \(error.description) (the stream waits for the next change)")
        }
    }
}
