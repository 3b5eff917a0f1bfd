import AttestCore
@testable import AttestService
import AttestTesting
import Testing

/// `server.keyCacheEntries` bounds the parsed device keys a worker keeps.
@Suite struct KeyCacheTests {
    /// Enrolls `count` devices on `flow` and refreshes each of them `rounds` times in turn,
    /// recording the cache's size after every refresh.
    func refreshInTurn(_ flow: DeviceFlow, devices count: Int, rounds: Int) throws -> (statuses: [Int], sizes: [Int]) {
        var devices = [SoftwareDevice]()
        for _ in 0..<count {
            flow.device = try SoftwareDevice.generate()
            try flow.enroll()
            devices.append(flow.device)
        }
        var statuses = [Int](), sizes = [Int]()
        for _ in 0..<rounds {
            for i in devices.indices {
                flow.device = devices[i]
                statuses.append(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge())).0)
                devices[i] = flow.device
                sizes.append(flow.context.caches.publicKeys.count)
            }
        }
        return (statuses, sizes)
    }

    @Test func theCacheNeverHoldsMoreThanItsCapacity() throws {
        let flow = try DeviceFlow { $0.keyCacheEntries = 2 }
        let (statuses, sizes) = try refreshInTurn(flow, devices: 3, rounds: 2)
        #expect(statuses == [Int](repeating: 200, count: 6))
        #expect(sizes.max() == 2, "\(sizes)")
        #expect(sizes == [1, 2, 1, 2, 1, 2], "full at 2: the third key starts it again empty")
    }

    @Test func zeroParsesTheKeyEveryTime() throws {
        let flow = try DeviceFlow { $0.keyCacheEntries = 0 }
        let (statuses, sizes) = try refreshInTurn(flow, devices: 2, rounds: 2)
        #expect(statuses == [200, 200, 200, 200])
        #expect(sizes == [0, 0, 0, 0])
    }
}
