import AttestCore
import AttestMetrics
@testable import AttestService
import AttestStore
import Foundation
import Testing

/// The monitor pool's `/metrics`: what it reads from the store at a scrape. (What the pools
/// count is shown end to end by nginx/e2e/metrics.sh, against the counts of the traffic it
/// sends; the process-wide segment is not set in these parallel in-process tests.)
@Suite struct MetricsEndpointTests {
    @Test func metricsAnswerPrometheusTextWithTheStoreReadNow() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let request = Fixture.request("GET", "/metrics")
        let response = Endpoint.monitor.handle(request, flow.context)
        #expect(response.status == 200)
        #expect(response.headers.contains { $0.name == "Content-Type" && $0.value == MetricsExposition.contentType })
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(text.contains("\nattestedge_monthly_active_devices{org=\"acme\"} 1\n"), "the enrolled device")
        #expect(text.contains("\nattestedge_monthly_active_devices_limit{org=\"acme\"} 10000\n"), "pro's limit")
        #expect(text.contains("\nattestedge_time_seconds \(flow.fixture.clock.now().seconds)\n"))
        #expect(text.contains("\nattestedge_webhook_backlog "))
        #expect(text.contains("\nattestedge_receipt_backlog 0\n"), "no receipt due in a fresh store")
        if !Fixture.onPostgres {
            for environment in ["durable", "ephemeral"] {
                #expect(text.contains("\nattestedge_store_map_size_bytes{environment=\"\(environment)\"} 16777216\n"))
                #expect(text.contains("\nattestedge_store_map_used_bytes{environment=\"\(environment)\"} "))
            }
        }
        // No device, key, address or app anywhere.
        for secret in [Base64.encode(flow.device.keyID), DeviceIdentity.deviceID(keyID: flow.device.keyID),
                       Fixture.appID, "127.0.0.1"] {
            #expect(!text.contains(secret))
        }
        #expect(Endpoint.monitor.handle(Fixture.request("POST", "/metrics"), flow.context).status == 405)
    }

    /// A pool whose master died (its socket file left behind, nothing listening) or whose socket
    /// is gone is `pool_up` 0 at the next scrape, whatever its segment last said; the others
    /// and the monitor itself are 1. The same probe as `/healthz`'s pool checks.
    @Test func poolUpIsProbedAtEachScrape() throws {
        let flow = try DeviceFlow()
        func scrape() -> String {
            String(decoding: Endpoint.monitor.handle(Fixture.request("GET", "/metrics"), flow.context).body,
                   as: UTF8.self)
        }
        #expect(!scrape().contains("attestedge_pool_up{"), "in process: no pools to probe")
        let sockets = try PoolSockets(refused: [.refresh], missing: [.webhooks])
        flow.context.poolSockets = sockets.path
        let text = scrape()
        for endpoint in Endpoint.allCases {
            let up = endpoint == .refresh || endpoint == .webhooks ? 0 : 1
            #expect(text.contains("\nattestedge_pool_up{pool=\"\(endpoint.rawValue)\"} \(up)\n"), "\(endpoint)")
        }
        #expect(text.contains("\nattestedge_pool_up{pool=\"monitor\"} 1\n"))
    }

    /// A store that does not answer the scrape's read (PostgreSQL down, an I/O error) still
    /// gets a 200: every family's HELP and TYPE, the pools and the clock, `store_up` 0, and no
    /// sample of what the read would have given. Without the fault, `store_up` is 1.
    @Test func aStoreThatDoesNotAnswerLeavesItsGaugesOutAndSaysSo() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let sockets = try PoolSockets()
        flow.context.poolSockets = sockets.path
        func scrape() -> (Int, String) {
            let r = Endpoint.monitor.handle(Fixture.request("GET", "/metrics"), flow.context)
            return (r.status, String(decoding: r.body, as: UTF8.self))
        }
        #expect(scrape().1.contains("\nattestedge_store_up 1\n"))
        flow.context.faults.scrapeStoreRead = { throw StoreError(.io, "connection refused") }
        let (status, text) = scrape()
        #expect(status == 200)
        #expect(text.contains("\nattestedge_store_up 0\n"))
        #expect(!text.contains("\nattestedge_monthly_active_devices{"))
        #expect(!text.contains("\nattestedge_webhook_backlog "))
        #expect(!text.contains("\nattestedge_receipt_backlog "))
        #expect(text.contains("# TYPE attestedge_monthly_active_devices gauge\n"))
        #expect(text.contains("\nattestedge_refresh_outcomes_total{outcome=\"ok\"} "), "the counters")
        #expect(text.contains("\nattestedge_pool_up{pool=\"refresh\"} 1\n"))
        #expect(text.contains("\nattestedge_time_seconds \(flow.fixture.clock.now().seconds)\n"))
        #expect(!text.contains("connection refused"))
    }

    /// The segment's fixed list of verification steps is the verifier's failure reasons. A
    /// receipt's failures (`receipt_*`) never fail a validate (Apple's steps do not include the
    /// receipt): they are not validate's steps and get their own family with receipts (#40).
    @Test func verificationStepsAreTheVerifiersReasons() {
        let steps = AttestError.Code.allCases.map(\.rawValue).filter { !$0.hasPrefix("receipt_") }
        #expect(MetricsLayout.verificationSteps == steps + ["other"])
    }
}
