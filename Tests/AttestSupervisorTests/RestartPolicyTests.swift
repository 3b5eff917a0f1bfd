@testable import AttestSupervisor
import Testing

/// Issue #7 item 16: a pool that crashes at run time is restarted with backoff; it is never
/// given up on (giving up is only for a pool that cannot start: serve's start-up).
@Suite("RestartPolicy") struct RestartPolicyTests {
    @Test("three deaths within two seconds of their start: restarted after a growing delay, never given up")
    func quickDeathsBackOff() {
        var policy = RestartPolicy()
        let delays = (0..<3).map { _ in policy.delayAfterDeath(uptime: 0.3) }
        #expect(delays == [0.5, 1.0, 2.0], "delays after three quick deaths")
        #expect(policy.quickDeaths == 3)
    }

    @Test("a crash loop settles at one restart every maxDelay seconds")
    func capped() {
        var policy = RestartPolicy()
        var last = 0.0
        for _ in 0..<20 { last = policy.delayAfterDeath(uptime: 0.1) }
        #expect(last == RestartPolicy.maxDelay)
    }

    @Test("a death after a stable run restarts at once and forgets the earlier crashes")
    func stableRunResets() {
        var policy = RestartPolicy()
        _ = policy.delayAfterDeath(uptime: 0.1)
        _ = policy.delayAfterDeath(uptime: 0.1)
        #expect(policy.delayAfterDeath(uptime: RestartPolicy.stableSeconds) == 0)
        #expect(policy.quickDeaths == 0)
        #expect(policy.delayAfterDeath(uptime: 0.1) == RestartPolicy.firstDelay, "backoff starts over")
    }
}
