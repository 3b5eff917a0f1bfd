/// One check of `GET /healthz` (`HealthEndpoint`). A failing answer names the checks that
/// failed by `name`, from this fixed vocabulary (never anything of a tenant's):
///
/// ```
/// store           a read of the store's schema record (LMDB or PostgreSQL) did not answer
/// store_map       an LMDB environment (durable or ephemeral) uses health.maxMapPercent of its map
///                 or more; PostgreSQL has no map, so it never fails there
/// signing_key     no token signing key is active at the clock's time (none, or every one retired),
///                 its private key cannot be read, or it failed to sign a probe
/// pool_challenge  connect(2) to RUN/challenge.sock was refused, or the socket is missing, or
/// pool_validate   the pool's metrics segment (RUN/metrics/challenge.metrics) says it runs no
/// pool_refresh    worker; likewise each pool the site routes to (RUN is the directory of the
/// pool_mad        monitor pool's own socket; `PoolProbe.problem`)
/// pool_webhooks
/// pool_flags
/// pool_feedback
/// pool_org
/// ```
enum HealthCheck: Hashable, Sendable {
    case store
    case storeMap
    case signingKey
    case pool(Endpoint)

    /// The check's name in a failing answer.
    var name: String {
        switch self {
        case .store: return "store"
        case .storeMap: return "store_map"
        case .signingKey: return "signing_key"
        case .pool(let endpoint): return "pool_" + endpoint.rawValue
        }
    }

    /// The pools the monitor pool depends on: every other one.
    static let pools = Endpoint.allCases.filter { $0 != .monitor }

    /// Every check, in the order a failing answer lists them.
    static let all: [HealthCheck] = [.store, .storeMap, .signingKey] + pools.map { .pool($0) }
}
