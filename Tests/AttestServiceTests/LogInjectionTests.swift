import AttestCore
import AttestService
import Testing

/// Attacker-chosen strings reach the log through error details (a CBOR `fmt`, header values,
/// nginx's request id): each request still logs exactly one line, with every control
/// character escaped, so no log entry can be forged.
@Suite struct LogInjectionTests {
    static let hostile = "x\n2026-06-01 validate requestId=forged status=200\r\u{0}\u{1B}[2J\"\\"
    static let escaped = #"x\n2026-06-01 validate requestId=forged status=200\r\u0000\u001B[2J\"\\"#

    static func expectOneCleanLine(_ logs: [String], containing text: String) {
        #expect(logs.count == 1, "one log entry: \(logs)")
        for line in logs {
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
                    "no control character in \(line.debugDescription)")
            #expect(line.contains(text), "\(line.debugDescription) shows the value escaped as \(text.debugDescription)")
        }
    }

    @Test func hostileHeadersAndRequestIDAreEscaped() throws {
        let f = try Fixture()
        let request = Fixture.request("POST", Endpoint.validate.path, body: "{}",
                                      headers: ["X-Bundle-ID": Self.hostile, "X-Team-ID": Fixture.teamID],
                                      requestID: "id\n1\u{1B}")
        let response = Endpoint.validate.handle(request, f.context)
        #expect(response.status == 400, "refused as a malformed bundle ID, and logged as such")
        Self.expectOneCleanLine(f.logs, containing: "requestId=id\\n1\\u001B ")
        Self.expectOneCleanLine(f.logs, containing: Self.escaped)
    }

    @Test func aHostileFmtInTheAttestationObjectIsEscaped() throws {
        let flow = try DeviceFlow()
        let challenge = try flow.fixture.challenge()
        let object = CBORWriter.encode(.map([CBORMapEntry(key: .text("fmt"), value: .text(Self.hostile)),
                                             CBORMapEntry(key: .text("attStmt"), value: .map([])),
                                             CBORMapEntry(key: .text("authData"), value: .bytes([0][...]))]))
        var body = try flow.validateBody(challenge: challenge)
        guard case .object(var members) = body else { throw FixtureError("body is an object") }
        members = members.map { $0.0 == "attestationObject" ? ($0.0, .string(Base64.encode(object))) : $0 }
        body = .object(members)
        let (status, _) = flow.post(.validate, body)
        #expect(status == 401)
        Self.expectOneCleanLine(flow.fixture.logs, containing: "detail=\"step format: fmt is \\\"" + Self.escaped)
    }
}
