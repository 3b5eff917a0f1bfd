/// One response, written back to nginx as a CGI response on the FastCGI stdout stream.
///
/// Wire format (see `serialized()`):
/// ```
/// Status: 200 OK\r\n
/// Content-Type: application/json\r\n     (each header in order)
/// Content-Length: 11\r\n                 (always computed from `body`)
/// \r\n
/// {"ok":true}
/// ```
public struct Response: Sendable {
    public var status: Int
    public var headers: [Header]
    public var body: [UInt8]

    public init(status: Int, headers: [Header] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response: `Content-Type: application/json` followed by `headers`. `body` must
    /// already be JSON; it is sent as UTF-8.
    public static func json(_ status: Int, _ body: String, headers: [Header] = []) -> Response {
        Response(status: status, headers: [Header("Content-Type", "application/json")] + headers,
                 body: Array(body.utf8))
    }
}
