/// One request as the web server passed it over FastCGI.
///
/// nginx sends the request as CGI-style parameters (`NAME=value` pairs, see
/// `nginx/conf/fastcgi_params`) followed by the body on the FastCGI stdin stream. Request headers
/// arrive as `HTTP_*` parameters: `X-Bundle-ID: x` becomes `HTTP_X_BUNDLE_ID=x`, except
/// `Content-Type` and `Content-Length`, which CGI names `CONTENT_TYPE` and `CONTENT_LENGTH`.
public struct Request: Sendable {
    /// `REQUEST_METHOD`: `GET`, `POST`, …
    public var method: String
    /// `DOCUMENT_URI`: the normalised path, without the query string.
    public var path: String
    /// `QUERY_STRING`, without the `?`; empty when there is none.
    public var query: String
    /// Every FastCGI parameter as received, read by name (`Params`).
    public var params: Params
    /// The request body; empty when `bodyTooLarge`.
    public var body: [UInt8]
    /// The body exceeded the server's body limit and was not read: `body` is empty and the
    /// responder answers 413 itself.
    public var bodyTooLarge: Bool

    public init(method: String = "GET", path: String = "/", query: String = "",
                params: [String: String] = [:], body: [UInt8] = [], bodyTooLarge: Bool = false) {
        self.init(method: method, path: path, query: query, params: Params(params), body: body,
                  bodyTooLarge: bodyTooLarge)
    }

    init(method: String, path: String, query: String, params: Params, body: [UInt8], bodyTooLarge: Bool) {
        self.method = method
        self.path = path
        self.query = query
        self.params = params
        self.body = body
        self.bodyTooLarge = bodyTooLarge
    }

    /// The request the server builds from what nginx sent: `method`, `path` and `query` come
    /// from `REQUEST_METHOD`, `DOCUMENT_URI` (else `REQUEST_URI` up to the `?`) and
    /// `QUERY_STRING`.
    public init(fastCGIParams params: [String: String], body: [UInt8] = [], bodyTooLarge: Bool = false) {
        self.init(fastCGIParams: Params(params), body: body, bodyTooLarge: bodyTooLarge)
    }

    /// As above, from the params the server received.
    public init(fastCGIParams params: Params, body: [UInt8] = [], bodyTooLarge: Bool = false) {
        let path = params["DOCUMENT_URI"]
            ?? params["REQUEST_URI"].map { String($0.prefix { $0 != "?" }) }
            ?? "/"
        self.init(method: params["REQUEST_METHOD"] ?? "GET", path: path.isEmpty ? "/" : path,
                  query: params["QUERY_STRING"] ?? "", params: params, body: body,
                  bodyTooLarge: bodyTooLarge)
    }

    /// The value of the request header `name` (case-insensitive), or `nil` when it was not
    /// sent. An empty `Content-Type` or `Content-Length` counts as not sent, because nginx
    /// passes those parameters empty when the header is absent.
    public func header(_ name: String) -> String? {
        let key = Self.paramName(forHeader: name)
        guard let value = params[key] else { return nil }
        if value.isEmpty, !key.hasPrefix("HTTP_") { return nil }
        return value
    }

    /// `REMOTE_ADDR`, or `""`.
    public var remoteAddress: String { params["REMOTE_ADDR"] ?? "" }

    /// nginx's `$request_id` (the `REQUEST_ID` parameter), or `""`: error bodies carry it so that
    /// they match nginx's access log line.
    public var requestID: String { params["REQUEST_ID"] ?? "" }

    /// The CGI parameter that carries request header `name`: ASCII letters upper-cased, `-`
    /// replaced by `_`, prefixed `HTTP_`; `CONTENT_TYPE` and `CONTENT_LENGTH` have no prefix.
    static func paramName(forHeader name: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count + 5)
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): bytes.append(byte - 32)
            case UInt8(ascii: "-"): bytes.append(UInt8(ascii: "_"))
            default: bytes.append(byte)
            }
        }
        let upper = String(decoding: bytes, as: UTF8.self)
        if upper == "CONTENT_TYPE" || upper == "CONTENT_LENGTH" { return upper }
        return "HTTP_" + upper
    }
}
