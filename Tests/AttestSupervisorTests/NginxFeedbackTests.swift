@testable import AttestSupervisor
import Foundation
import Testing

/// site.conf sends every pool `attestctl serve` starts some path, and the feedback pool the
/// SDK's feature-request and ticket paths (issue #42).
@Suite("nginx templates: the feedback pool") struct NginxFeedbackTests {
    static let site = NginxTemplateTests.site

    /// The socket of the location that matches `path` by prefix (`location /prefix/ {`).
    static func socket(ofPrefix prefix: String) -> String? {
        guard let start = site.range(of: "location \(prefix) {") else { return nil }
        let rest = site[start.upperBound...]
        guard let pass = rest.range(of: "fastcgi_pass unix:@RUN_DIR@/"), let end = rest[pass.upperBound...].firstIndex(of: ";")
        else { return nil }
        return String(rest[pass.upperBound..<end])
    }

    @Test func everyPoolServeStartsHasALocation() {
        for endpoint in Serve.endpoints {
            #expect(Self.site.contains("fastcgi_pass unix:@RUN_DIR@/\(endpoint.rawValue).sock;"), "\(endpoint)")
        }
    }

    @Test func featureRequestsAndTicketsGoToTheFeedbackPool() {
        #expect(Self.socket(ofPrefix: "/api/v1/feedback/") == "feedback.sock")
        #expect(Self.socket(ofPrefix: "/api/v1/support/") == "feedback.sock")
    }

    /// The moderation org API (FeedbackAdminEndpoint): each collection exactly and below it.
    @Test func moderationOrgAPIGoesToTheFeedbackPool() {
        for base in ["/api/v1/org/feedback", "/api/v1/org/tickets"] {
            #expect(Self.socket(ofPrefix: "= " + base) == "feedback.sock", "\(base)")
            #expect(Self.socket(ofPrefix: base + "/") == "feedback.sock", "\(base)/")
        }
    }
}
