@testable import FastCGI
import Testing

@Suite("Request") struct RequestTests {
    @Test("header names map to CGI parameter names", arguments: [
        ("X-Bundle-ID", "HTTP_X_BUNDLE_ID"), ("x-team-id", "HTTP_X_TEAM_ID"),
        ("Authorization", "HTTP_AUTHORIZATION"), ("Content-Type", "CONTENT_TYPE"),
        ("content-length", "CONTENT_LENGTH"), ("If-None-Match", "HTTP_IF_NONE_MATCH"),
        ("X_Odd", "HTTP_X_ODD"), ("x-a1-b2", "HTTP_X_A1_B2"),
    ])
    func paramName(header: String, param: String) {
        #expect(Request.paramName(forHeader: header) == param)
    }

    @Test("header lookup is case-insensitive")
    func headerLookup() {
        let request = Request(params: ["HTTP_X_BUNDLE_ID": "com.example.app", "HTTP_X_EMPTY": ""])
        #expect(request.header("X-Bundle-ID") == "com.example.app")
        #expect(request.header("x-bundle-id") == "com.example.app")
        #expect(request.header("X-Team-ID") == nil)
        #expect(request.header("X-Empty") == "", "a header sent empty is still sent")
    }

    @Test("Content-Type and Content-Length read CONTENT_*; empty means absent")
    func contentHeaders() {
        let sent = Request(params: ["CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "12"])
        #expect(sent.header("Content-Type") == "application/json")
        #expect(sent.header("Content-Length") == "12")
        let absent = Request(params: ["CONTENT_TYPE": "", "CONTENT_LENGTH": ""])
        #expect(absent.header("Content-Type") == nil)
        #expect(absent.header("Content-Length") == nil)
    }

    @Test("remoteAddress and requestID come from REMOTE_ADDR and REQUEST_ID, else empty")
    func ids() {
        let request = Request(params: ["REMOTE_ADDR": "192.0.2.7", "REQUEST_ID": "3f2a9c"])
        #expect(request.remoteAddress == "192.0.2.7")
        #expect(request.requestID == "3f2a9c")
        #expect(Request().remoteAddress == "")
        #expect(Request().requestID == "")
    }

    @Test("the default request is GET / with nothing else")
    func defaults() {
        let request = Request()
        #expect(request.method == "GET")
        #expect(request.path == "/")
        #expect(request.query == "")
        #expect(request.body.isEmpty)
        #expect(!request.bodyTooLarge)
    }

    @Test("built from params: method, DOCUMENT_URI, QUERY_STRING")
    func fromParams() {
        let params = ["REQUEST_METHOD": "POST", "DOCUMENT_URI": "/api/v1/attestation/validate",
                      "REQUEST_URI": "/api/v1/attestation/validate?x=1", "QUERY_STRING": "x=1"]
        let request = Request(fastCGIParams: params, body: [1, 2, 3])
        #expect(request.method == "POST")
        #expect(request.path == "/api/v1/attestation/validate")
        #expect(request.query == "x=1")
        #expect(request.params == params)
        #expect(request.body == [1, 2, 3])
    }

    @Test("without DOCUMENT_URI the path is REQUEST_URI up to the ?")
    func pathFallback() {
        #expect(Request(fastCGIParams: ["REQUEST_URI": "/a/b?c=d"]).path == "/a/b")
        #expect(Request(fastCGIParams: [:]).path == "/")
        #expect(Request(fastCGIParams: [:]).method == "GET")
    }
}
