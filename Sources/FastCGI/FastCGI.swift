/// Placeholder until the FastCGI runtime lands: the request and response shapes the service
/// codes against (replaced by the real module).
public struct Header: Sendable, Hashable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) { self.name = name; self.value = value }
}

public struct Request: Sendable {
    public var method: String
    public var path: String
    public var query: String
    public var params: [String: String]
    public var body: [UInt8]
    public var bodyTooLarge: Bool

    public init(method: String = "GET", path: String = "/", query: String = "", params: [String: String] = [:],
                body: [UInt8] = [], bodyTooLarge: Bool = false) {
        self.method = method
        self.path = path
        self.query = query
        self.params = params
        self.body = body
        self.bodyTooLarge = bodyTooLarge
    }

    public func header(_ name: String) -> String? {
        let key = "HTTP_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 })
        return params[key]
    }

    public var remoteAddress: String { params["REMOTE_ADDR"] ?? "" }
    public var requestID: String { params["REQUEST_ID"] ?? "" }
}

public struct Response: Sendable {
    public var status: Int
    public var headers: [Header]
    public var body: [UInt8]

    public init(status: Int, headers: [Header] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: Int, _ body: String, headers: [Header] = []) -> Response {
        Response(status: status, headers: [Header("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }
}

public protocol Responder {
    mutating func respond(to request: Request) -> Response
}
