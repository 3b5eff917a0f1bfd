internal import CFastCGI
import Glibc

/// Serves one queued connection the way a pool worker does, without the pool: for fuzzing
/// and tests of the request path (FastCGI records → params and body → `Request` →
/// responder → `Response` on the wire).
public enum SingleConnection {
    /// Accepts one connection queued on `listenFD` (a listening unix socket; make it
    /// non-blocking so that a stream libfcgi refuses returns instead of waiting for another
    /// connection), reads its request, answers it with `responder` and closes it.
    /// - Returns: the response, or `nil` when nothing was accepted (libfcgi refused the
    ///   stream's `FCGI_BEGIN_REQUEST` or `FCGI_PARAMS` and closed it, or nothing was queued).
    public static func serve(listenFD: Int32, bodyLimit: Int, responder: inout any Responder) -> Response? {
        guard FCGX_Init() == 0 else { return nil }
        let connection = FCGXConnection(listenFD: listenFD)
        guard connection.accept() == 0 else { return nil }
        let response = Worker.handle(connection, bodyLimit: bodyLimit, responder: &responder)
        connection.write(response.serialized())
        connection.finish()
        return response
    }
}
