@testable import AttestSupervisor
import Testing

/// site.conf sends the operator console's organization API to the org pool (issue #43).
@Suite("nginx templates: the org pool") struct NginxOrgTests {
    @Test func theConsolesPathsGoToTheOrgPool() {
        let socket = NginxFeedbackTests.socket(ofPrefix:)
        #expect(socket("/api/v1/org/devices") == "org.sock")
        for base in ["/api/v1/org/apps", "/api/v1/org/api-keys"] {
            #expect(socket("= " + base) == "org.sock", "\(base)")
            #expect(socket(base + "/") == "org.sock", "\(base)/")
        }
        #expect(socket("= /api/v1/org/audit") == "org.sock")
        #expect(socket("= /api/v1/console/session") == "org.sock")
        #expect(Serve.endpoints.contains(.org))
        #expect(socket("= /api/v1/org/flag-evaluation") == "flags.sock", "the flags pool evaluates")
    }
}
