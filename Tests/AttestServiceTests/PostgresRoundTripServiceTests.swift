import AttestCore
@testable import AttestService
@testable import AttestStore
import AttestTesting
import Testing

/// PostgreSQL only (`ATTEST_TEST_STORE=postgres`): the round trips a validate and a refresh
/// make to the database, which with the database on another host are most of a worker's
/// time per request. The reads each final write will make go out with its first statement
/// (`Prefetch.enrollment`, `Prefetch.deviceWrite`); a change that adds a read it does not
/// prefetch shows here. The fewest of three requests counts: the app's record is read again
/// when the store's version moves, which on PostgreSQL it does every second.
@Suite(.enabled(if: Fixture.onPostgres, "needs ATTEST_TEST_STORE=postgres"))
struct PostgresRoundTripServiceTests {
    static func fewestRoundTrips(_ flow: DeviceFlow, _ request: () throws -> Void) throws -> Int {
        let connection = try #require((flow.context.store.backend as? PostgresStore)?.connection)
        var fewest = Int.max
        for _ in 0..<3 {
            let before = connection.roundTrips
            try request()
            fewest = min(fewest, connection.roundTrips - before)
        }
        return fewest
    }

    /// (It used to make 11: the admission's device read and the final write's three other
    /// reads one at a time, and the next request's app lookup, revalidated after every write
    /// of the worker, not only after writes of orgs and apps; then 5, with the challenge's
    /// single use in a round trip of its own.)
    @Test func aRefreshMakesFourRoundTrips() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        var statuses = [Int]()
        let trips = try Self.fewestRoundTrips(flow) {
            let body = try flow.refreshBody(challenge: try flow.fixture.challenge())
            statuses.append(flow.post(.refresh, body).0)
        }
        #expect(statuses == [200, 200, 200])
        // Admission: the rate bump with the challenge's single use and the device read; COMMIT.
        // Final write: the device with its index entry, monthly entry and lineage; COMMIT.
        #expect(trips == 4)
    }

    /// A device's first refresh of a day counts the day without reading anything more (the
    /// day count's upsert goes out with the next statement): as many round trips as a refresh
    /// later that day. (It used to read the month's totals: one more.)
    @Test func aDevicesFirstRefreshOfADayMakesFourRoundTrips() throws {
        let flow = try DeviceFlow()
        flow.fixture.clock.set(Timestamp(iso8601: "2026-06-01T13:00:00Z")!)
        try flow.enroll()
        let connection = try #require((flow.context.store.backend as? PostgresStore)?.connection)
        var trips = [Int]()
        for day in 2...4 {
            flow.fixture.clock.set(Timestamp(iso8601: "2026-06-0\(day)T00:00:10Z")!)
            let body = try flow.refreshBody(challenge: try flow.fixture.challenge())
            let before = connection.roundTrips
            #expect(flow.post(.refresh, body).0 == 200)
            trips.append(connection.roundTrips - before)
        }
        // As in aRefreshMakesFourRoundTrips; the app's record may be read again once the
        // store's version moved (every second on PostgreSQL), so the fewest counts.
        #expect(trips.min() == 4, "\(trips)")
        let report = try flow.context.store.read { try $0.usageMonthReport(org: "acme", month: "2026-06") }
        #expect(report?.days.map(\.activeDevices) == [1, 1, 1, 1])
    }

    @Test func aValidateMakesFourRoundTrips() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        var statuses = [Int]()
        let trips = try Self.fewestRoundTrips(flow) {
            flow.device = try SoftwareDevice.generate()
            let body = try flow.validateBody(challenge: try flow.fixture.challenge())
            statuses.append(flow.post(.validate, body).0)
        }
        #expect(statuses == [200, 200, 200])
        // Admission: the rate bump with the challenge's single use; COMMIT. Final write: the
        // key with everything prefetched (the sweep of past months and the two events' inserts
        // are queued with the statements after it); COMMIT.
        #expect(trips == 4)
    }

    /// A heartbeat's reads depend on each other; from a device's second heartbeat in a worker
    /// the keys its first read are prefetched (`HeartbeatHints`): 2 round trips, not 4. A
    /// wrong hint costs reads, never the answer.
    @Test func aDevicesLaterHeartbeatsMakeTwoRoundTrips() throws {
        let flow = try DeviceFlow()
        let token = try #require(try flow.enroll()["token"]?.stringValue)
        var headers = Fixture.appHeaders
        headers["Authorization"] = "Bearer " + token
        let body = #"{"sdkVersion":"2.1.0","appState":"active"}"#
        var statuses = [Int]()
        let trips = try Self.fewestRoundTrips(flow) {
            statuses.append(flow.fixture.call(.mad, body: body, headers: headers).0)
        }
        #expect(statuses == [200, 200, 200])
        #expect(trips == 2, "BEGIN with the deviceId's key, the device and its monthly entry; COMMIT")
        let deviceID = DeviceIdentity.deviceID(keyID: flow.device.keyID)
        flow.context.caches.heartbeatHints.remember(deviceID: deviceID, keyID: [UInt8](repeating: 7, count: 32),
                                                    identity: [UInt8](repeating: 7, count: 16))
        #expect(flow.fixture.call(.mad, body: body, headers: headers).0 == 200,
                "a stale hint: the reads it missed go out on their own")
        #expect(flow.context.caches.heartbeatHints.hint(for: deviceID)?.keyID == flow.device.keyID,
                "and the hint is mended")
    }
}

