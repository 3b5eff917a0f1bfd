import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// Validate and refresh queue the catalogue's events in the transactions of the changes they
/// report (docs/webhooks.md), and a transaction that fails leaves none behind.
@Suite struct WebhookEventTests {
    static func events(_ flow: DeviceFlow) throws -> [OutboxEvent] {
        try flow.context.store.read { try $0.outbox() }.map(\.event)
    }

    static func data(_ event: OutboxEvent) throws -> JSONValue { try JSONParser.parse(event.dataJSON) }

    @Test func anEnrollmentQueuesDeviceNewAndAttestationCompleted() throws {
        let flow = try DeviceFlow()
        let body = try flow.enroll()
        let queued = try Self.events(flow)
        #expect(queued.map(\.event) == ["device.new", "attestation.completed"])
        #expect(queued.allSatisfy { $0.org == "acme" && $0.id.hasPrefix("evt_") && $0.target.isEmpty })
        #expect(Set(queued.map(\.id)).count == 2, "each event has its own id")
        let data = try Self.data(queued[1])
        #expect(data["device_id"]?.stringValue == body["deviceIntelligence"]?["deviceId"]?.stringValue)
        #expect(data["app_id"]?.stringValue == Fixture.appID)
        #expect(data["key_id"]?.stringValue == Base64.encode(flow.device.keyID))
        #expect(data["environment"]?.stringValue == "production")
        #expect(data["device_model"]?.stringValue == "iPhone15,2")
        #expect(data["new_device"]?.boolValue == true)
        #expect(data["attestation_count"]?.intValue == 1)
    }

    @Test func aNewKeyOnAKnownFingerprintIsNotANewDevice() throws {
        let flow = try DeviceFlow()
        let fp: [(String, JSONValue)] = [("deviceFingerprint", "fp-1")]
        #expect(flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(), extra: fp)).0
                    == 200)
        flow.device = try SoftwareDevice.generate()
        #expect(flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(), extra: fp)).0
                    == 200)
        #expect(try Self.events(flow).map(\.event) == ["device.new", "attestation.completed", "attestation.completed"])
        #expect(try Self.data(try Self.events(flow)[2])["attestation_count"]?.intValue == 2)
    }

    @Test func aValidateWhoseTransactionFailsLeavesNoEventAndNoDevice() throws {
        let flow = try DeviceFlow()
        struct Injected: Error {}
        flow.context.faults.afterValidateWrites = { throw Injected() }
        let (status, _) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge()))
        #expect(status == 500)
        #expect(try Self.events(flow).isEmpty, "the events were written in the aborted transaction")
        #expect(try flow.storedDevice() == nil)
        flow.context.faults.afterValidateWrites = nil
        try flow.enroll()
        #expect(try Self.events(flow).map(\.event) == ["device.new", "attestation.completed"])
    }

    @Test func aFailedAttestationQueuesAttestationFailedWithTheStep() throws {
        let flow = try DeviceFlow(policy: .production)
        let (status, _) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                                     environment: .development))
        #expect(status == 401)
        let queued = try Self.events(flow)
        #expect(queued.map(\.event) == ["device.attestation_failed"])
        #expect(try Self.data(queued[0])["step"]?.stringValue?.isEmpty == false)
        #expect(try flow.storedDevice() == nil)
    }

    @Test func aRequestRefusedBeforeItsChallengeQueuesNothing() throws {
        let flow = try DeviceFlow()
        var body = try flow.validateBody(challenge: try flow.fixture.challenge())
        body = .object(body.objectValue!.map { $0.0 == "keyId" ? ($0.0, .string("short")) : $0 })
        #expect(flow.post(.validate, body).0 == 400)
        #expect(try Self.events(flow).isEmpty)
    }

    @Test func aReplayedAttestationIsAnAnomaly() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        #expect(flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge())).0 == 401)
        let last = try #require(try Self.events(flow).last)
        #expect(last.event == "attestation.anomaly")
        #expect(try Self.data(last)["kind"]?.stringValue == "attestation_replayed")
    }

    @Test func aReplayedCounterIsAnAnomalyInTheInvalidatingTransaction() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)).0 == 200)
        #expect(try Self.events(flow).count == 2, "a successful refresh queues nothing")
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 5)).0 == 409)
        let last = try #require(try Self.events(flow).last)
        let data = try Self.data(last)
        #expect(last.event == "attestation.anomaly")
        #expect(data["kind"]?.stringValue == "counter_replayed")
        #expect(data["device_status"]?.stringValue == "invalidated")
        #expect(data["stored_counter"]?.intValue == 5)
        // The device is invalidated now: further failures change nothing and queue nothing.
        #expect(flow.post(.refresh, try flow.refreshBody(challenge: try flow.fixture.challenge(), counter: 6)).0 == 409)
        #expect(try Self.events(flow).count == 3)
    }

    @Test func aForgedAssertionForAKnownKeyIsAnAnomalyAndChangesNothingElse() throws {
        let flow = try DeviceFlow()
        try flow.enroll()
        let impostor = try SoftwareDevice.generate()
        let challenge = try flow.fixture.challenge()
        let cdh = SHA256.hash(challenge.utf8)
        let assertion = try impostor.assertion(clientDataHash: cdh, appID: Fixture.appID, counter: 1)
        let body: JSONValue = ["keyId": .string(Base64.encode(flow.device.keyID)),
                               "assertion": .string(Base64.encode(assertion)),
                               "clientDataHash": .string(Base64.encode(cdh)), "challenge": .string(challenge)]
        #expect(flow.post(.refresh, body).0 == 409)
        let last = try #require(try Self.events(flow).last)
        #expect(last.event == "attestation.anomaly")
        #expect(try Self.data(last)["kind"]?.stringValue == "forged_assertion")
        #expect(try flow.storedDevice()?.status == .active)
    }

    @Test func queueEventsFalseQueuesNothing() throws {
        let flow = try DeviceFlow(configure: { $0.webhookQueueEvents = false })
        try flow.enroll()
        #expect(try Self.events(flow).isEmpty)
    }
}
