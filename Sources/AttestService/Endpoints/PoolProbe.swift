import AttestMetrics
#if canImport(Glibc)
import Glibc
#endif

/// Whether a pool is up, as nginx would find it: a connect(2) to its unix socket.
enum PoolProbe {
    /// Why `endpoint`'s pool is down, or `nil` when it is up: what `/healthz` (its pool checks)
    /// and `/metrics` (`attestedge_pool_up`) both go by. The monitor pool is up (it is the one
    /// answering); any other pool is when its socket in `sockets` takes connections and, if its
    /// segment in `metrics` (`RUN/metrics`) can be read, that segment counts a worker: a master
    /// that holds its socket with no worker leaves nginx's requests in the backlog until they
    /// time out. A segment missing or not of this layout says nothing (the socket decides).
    static func problem(_ endpoint: Endpoint, sockets: String, metrics: String?) -> String? {
        guard endpoint != .monitor else { return nil }
        let path = sockets + "/\(endpoint.rawValue).sock"
        guard accepts(path) else { return "\(path) refuses connections or is missing" }
        if let metrics, let slots = MetricsSegment.read(path: MetricsSegment.path(directory: metrics,
                                                                                  name: endpoint.rawValue)),
           slots[MetricsLayout.poolWorkers] == 0 {
            return "the \(endpoint.rawValue) pool runs no worker (\(path) takes connections)"
        }
        return nil
    }

    /// Whether the unix stream socket at `path` takes connections. The connect does not block:
    /// a listener whose backlog is full (`EAGAIN`) is up, only busy. A refused connect (the
    /// socket file outlived its pool) or a missing socket is down. The connection is closed at
    /// once; a pool's worker takes that as a peer gone before its request and says nothing.
    static func accepts(_ path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0 || errno == EAGAIN
    }
}
