import AttestCore
import AttestService
import FastCGI

/// The JSON parser and request-field decoding, through the validate and refresh endpoints
/// in-process. The first byte picks the endpoint (even: validate, odd: refresh); the rest is
/// the body, where `@CHALLENGE@` and `@CDH@` become a fresh authentic challenge and its hash
/// so that mutated bodies also reach the checks behind the challenge.
///
/// Properties: JSON that parses survives a round trip through the writer; every answer is a
/// documented status with the JSON error envelope (no 500).
enum RequestTarget {
    static func make() -> FuzzTarget {
        let service = FuzzService()
        return FuzzTarget(name: "request",
                          summary: "JSONParser round trip; validate/refresh endpoints in-process") { input in
            guard let selector = input.first else { return }
            let body = Array(input.dropFirst())
            if let value = try? JSONParser.parse(body) {
                guard let again = try? JSONParser.parse(value.jsonBytes) else {
                    fatalError("fuzz property violated: written JSON does not parse")
                }
                expect(again == value, "JSON round trip changed the value")
            }
            let endpoint: Endpoint = selector & 1 == 0 ? .validate : .refresh
            var params = FuzzService.appHeaders
            params["REQUEST_ID"] = "fuzz-request"
            params["REMOTE_ADDR"] = "192.0.2.1"
            let request = Request(method: "POST", path: endpoint.path, params: params, body: service.substitute(body))
            FuzzService.checkAnswer(service.respond(request), requestID: "fuzz-request")
        }
    }
}
