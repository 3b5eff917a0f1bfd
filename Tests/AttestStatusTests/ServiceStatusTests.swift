@testable import AttestStatus
import CLISupport
import Testing

/// The status from two scrapes (`Scrapes`): rates over the interval, p99 from bucket deltas,
/// percentages, and the contract's families checked.
@Suite struct ServiceStatusTests {
    func pool(_ name: String) throws -> ServiceStatus.Pool {
        try #require(try Scrapes.status().pools.first { $0.name == name })
    }

    @Test func everyPoolOfTheAnswerIsListedInNameOrder() throws {
        #expect(try Scrapes.status().pools.map(\.name) == ["challenge", "mad", "monitor", "refresh", "webhooks"])
    }

    @Test func requestRatesAreCounterIncreasesOverTheInterval() throws {
        let refresh = try pool("refresh")
        #expect(refresh.requestsPerSecond == 101, "(196 + 2 + 2 + 2) / 2 s")
        #expect(refresh.serverErrorsPerSecond == 1, "503: +2 / 2 s")
        #expect(refresh.clientErrorsPerSecond == 2, "409 +2 and the new 400 series +2, / 2 s")
        #expect(try pool("challenge").requestsPerSecond == 15, "a counter that went down started over: 30 / 2 s")
        #expect(try pool("mad").requestsPerSecond == 51, "both endpoints: (100 + 2) / 2 s")
        #expect(try pool("monitor").requestsPerSecond == 0.5, "a series new in the later scrape counts from 0")
        #expect(try pool("webhooks").requestsPerSecond == 0)
    }

    @Test func p99ComesFromTheIntervalsBucketDeltas() throws {
        // refresh: 400 new observations, 392 ≤ 0.25 s, 8 in (0.5, 1]; rank 396 → halfway through (0.5, 1].
        let refresh = try #require(try pool("refresh").p99)
        #expect(abs(refresh.value - 0.75) < 1e-12 && !refresh.isLowerBound)
        // challenge after its reset: 30 observations ≤ 1 ms; rank 29.7 → 0.001 × 29.7 / 30.
        let challenge = try #require(try pool("challenge").p99)
        #expect(abs(challenge.value - 0.00099) < 1e-15)
        // mad, summed over its endpoints: 100 ≤ 1 ms and 2 > 2.5 s; rank 100.98 of 102 is in +Inf.
        #expect(try pool("mad").p99 == HistogramQuantile(value: 2.5, isLowerBound: true))
        #expect(try pool("monitor").p99 == nil, "no histogram samples")
        #expect(try pool("webhooks").p99 == nil)
    }

    @Test func workersAndRestartsAreTheLaterScrapes() throws {
        #expect(try pool("refresh").workers == 4 && pool("refresh").workerRestarts == 3)
        #expect(try pool("monitor").workers == 1 && pool("monitor").workerRestarts == 0)
    }

    @Test func storeMapsInPercentOfTheirSize() throws {
        let stores = try Scrapes.status().stores
        #expect(stores.map(\.environment) == ["durable", "ephemeral"])
        #expect(stores[0] == .init(environment: "durable", usedBytes: 104_857_600, sizeBytes: 1_073_741_824,
                                   percent: 9.765625), "100 MiB of 1 GiB")
        #expect(stores[1].percent == 25, "16 MiB of 64 MiB")
    }

    @Test func webhookBacklogAndFailures() throws {
        let w = try Scrapes.status().webhooks
        #expect(w.backlog == 7)
        #expect(w.attemptsPerSecond == 8, "(10 + 4 + 0 + 2) / 2 s")
        #expect(w.failuresPerSecond == 3, "everything but 2xx: (4 + 0 + 2) / 2 s")
        #expect(w.failedAttempts == 21, "14 + 5 + 2")
    }

    @Test func organizationsAgainstTheirLimit() throws {
        let orgs = try Scrapes.status().organizations
        #expect(orgs.map(\.name) == [#"a "quoted" org"#, "acme", "beta"])
        #expect(orgs[1] == .init(name: "acme", activeDevices: 250, limit: 1000, percent: 25))
        #expect(orgs[2] == .init(name: "beta", activeDevices: 7, limit: nil, percent: nil), "limit 0: unlimited")
        #expect(orgs[0].percent == 75)
    }

    @Test func theIntervalAndTheHostsClock() throws {
        let s = try Scrapes.status()
        #expect(s.seconds == 2 && s.hostTime == 1_796_000_002)
    }

    @Test func withoutTheContractsRequiredFamiliesItIsNotAttestEdge() throws {
        let later = try ScrapedMetrics(prometheusText: Scrapes.later)
        for name in ["attestedge_time_seconds", "attestedge_pool_workers"] {
            let text = Scrapes.later.split(separator: "\n")
                .filter { !$0.contains(name + " ") && !$0.contains(name + "{") }
                .joined(separator: "\n")
            #expect(throws: StatusFailure(.missingFamily, "")) {
                try ServiceStatus(earlier: later, later: ScrapedMetrics(prometheusText: text), seconds: 1)
            }
            do {
                _ = try ServiceStatus(earlier: later, later: ScrapedMetrics(prometheusText: text), seconds: 1)
            } catch {
                #expect(error.message.contains(name))
            }
        }
        let other = try ScrapedMetrics(prometheusText: "# TYPE go_goroutines gauge\ngo_goroutines 12\n")
        do {
            _ = try ServiceStatus(earlier: other, later: other, seconds: 1)
            Issue.record("another program's metrics were taken")
        } catch {
            #expect(error.code == .missingFamily)
            #expect(error.message == "the answer has no attestedge_pool_workers, attestedge_time_seconds: it is not "
                        + "AttestEdge's metrics, or from a release without them")
        }
    }

    @Test func optionalFamiliesMayBeAbsent() throws {
        let minimal = try ScrapedMetrics(prometheusText: """
            # TYPE attestedge_pool_workers gauge
            attestedge_pool_workers{pool="refresh"} 2
            # TYPE attestedge_time_seconds gauge
            attestedge_time_seconds 1796000000.25
            """)
        let s = try ServiceStatus(earlier: minimal, later: minimal, seconds: 1)
        #expect(s.pools == [.init(name: "refresh", workers: 2, workerRestarts: 0, requestsPerSecond: 0,
                                  serverErrorsPerSecond: 0, clientErrorsPerSecond: 0, p99: nil)])
        #expect(s.stores.isEmpty && s.organizations.isEmpty)
        #expect(s.webhooks == .init(backlog: 0, attemptsPerSecond: 0, failuresPerSecond: 0, failedAttempts: 0))
    }

    @Test func aFamilyOfAnotherTypeIsRefused() throws {
        let text = Scrapes.later.replacingAll("# TYPE attestedge_requests_total counter",
                                               with: "# TYPE attestedge_requests_total gauge")
        let later = try ScrapedMetrics(prometheusText: text)
        #expect(throws: StatusFailure(.familyType, "")) { try ServiceStatus(earlier: later, later: later, seconds: 1) }
    }

    @Test func theIntervalMustBePositive() throws {
        let e = try ScrapedMetrics(prometheusText: Scrapes.later)
        #expect(throws: StatusFailure(.answer, "")) { try ServiceStatus(earlier: e, later: e, seconds: 0) }
    }
}
