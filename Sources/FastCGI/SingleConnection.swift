/// Serves one queued connection the way a pool worker does, without the pool: for fuzzing
/// and tests of the request path (FastCGI records → params and body → `Request` →
/// responder → `Response` on the wire).
public enum SingleConnection {
    /// Accepts one connection queued on `listenFD` (a listening unix socket; make it
    /// non-blocking so that nothing queued returns instead of waiting), reads its request,
    /// answers it with `responder` and closes it.
    /// - Returns: the response, or `nil` when nothing was answered: nothing was queued, or
    ///   the connection was closed without a request (the stream ended or broke the protocol
    ///   before its params were complete, asked for another role, or was aborted).
    public static func serve(listenFD: Int32, bodyLimit: Int, responder: inout any Responder) -> Response? {
        let connection = Connection(listenFD: listenFD)
        guard case .request(let params) = connection.accept() else { return nil }
        return Worker.serve(connection, params: params, bodyLimit: bodyLimit, responder: &responder)
    }
}
