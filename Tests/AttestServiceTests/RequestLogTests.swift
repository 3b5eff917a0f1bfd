import AttestCore
import AttestService
import Testing

/// `server.requestLog`: refused requests always log one line; with `all`, successes do too.
@Suite struct RequestLogTests {
    static var line: Regex<(Substring, Substring, Substring, Substring, Substring, Substring, Substring?)> {
        /^(\w+) requestId=(\S+) status=(\d{3}) code=(\S+) us=(\d+)( detail=".*")?$/
    }

    @Test func byDefaultOnlyRefusedRequestsLogALineWithTheirDuration() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        #expect(flow.fixture.logs.isEmpty, "successes are nginx's access log's: \(flow.fixture.logs)")
        _ = flow.fixture.call(.refresh, body: "{}")
        #expect(flow.fixture.logs.count == 1)
        let match = try #require(try Self.line.wholeMatch(in: flow.fixture.logs[0]), "\(flow.fixture.logs)")
        #expect(match.output.1 == "refresh" && match.output.3 == "400" && match.output.4 == "bad_request")
    }

    @Test func withAllEverySuccessLogsOneLineToo() throws {
        let flow = try DeviceFlow(configure: { $0.requestLog = .all })
        try flow.enroll()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0 == 200)
        let lines = flow.fixture.logs
        #expect(lines.count == 4, "challenge, validate, challenge, refresh: \(lines)")
        for line in lines { #expect(try Self.line.wholeMatch(in: line) != nil, "\(line)") }
        #expect(lines.last?.hasPrefix("refresh requestId=req-1 status=200 code=- us=") == true)
    }
}
