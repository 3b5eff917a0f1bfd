import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// `AppleRiskMetric.record`, played as the redeemer plays it after Apple answered 200: the
/// receipt replaces the old one, the device carries the metric into its tokens, and
/// `device.risk_metric_changed` is queued only when the metric crosses the app's threshold.
@Suite struct AppleRiskMetricTests {
    /// An enrolled device whose receipts the flow's receipt authority signs (as Apple's).
    let flow: DeviceFlow
    let credentialCertificate: [UInt8]

    init() throws {
        flow = try DeviceFlow()
        try flow.enroll()
        credentialCertificate = try flow.device.synthetic(clientDataHash: [UInt8](repeating: 0, count: 32),
                                                          appID: Fixture.appID)
            .build(pki: flow.pki, at: flow.fixture.clock.now()).credentialCertificate
    }

    var now: Timestamp { flow.fixture.clock.now() }

    /// A RECEIPT as Apple answers it, verified as the redeemer verifies it.
    func redeemed(metric: Int, appID: String = Fixture.appID, certificate: [UInt8]? = nil,
                  createdAt: Timestamp? = nil) throws -> (AppAttestReceipt, [UInt8]) {
        let raw = try flow.receipts.receipt(TestReceiptAuthority.payload(TestReceiptAuthority.attributes(
            kind: .receipt, appID: appID, credentialCertificate: certificate ?? credentialCertificate,
            createdAt: createdAt ?? now, riskMetric: metric)))
        return (try ReceiptVerifier(anchor: flow.receipts.root).verify(raw, at: now), raw)
    }

    @discardableResult
    func record(metric: Int, next: Timestamp? = nil) throws -> AppleRiskMetric.Change {
        let (receipt, raw) = try redeemed(metric: metric)
        return try flow.context.store.write { txn in
            try AppleRiskMetric.record(receipt, raw: raw, keyID: flow.device.keyID, at: now, next: next, in: txn,
                                       context: flow.context)
        }
    }

    func events() throws -> [JSONValue] {
        try flow.outbox().filter { $0.event == "device.risk_metric_changed" }.map { try JSONParser.parse($0.dataJSON) }
    }

    @Test func crossingUpThenDownQueuesOneEventEachAndTokensCarryTheMetric() throws {
        try flow.setApp { $0.appleRiskMetricThreshold = 3 }
        flow.fixture.clock.advance(120)
        let up = try record(metric: 5, next: now + 86_400)
        #expect(up.metric == 5 && up.previous == nil && up.threshold == 3 && up.crossed)
        var list = try events()
        #expect(list.count == 1 && list.last?["direction"]?.stringValue == "above"
                    && list.last?["apple_risk_metric"]?.intValue == 5 && list.last?["previous_apple_risk_metric"] == .null
                    && list.last?["threshold"]?.intValue == 3, "\(list)")

        let stored = try #require(try flow.context.store.read { try $0.receiptRecord(keyID: flow.device.keyID) })
        #expect(stored.kind == "RECEIPT" && stored.riskMetric == 5 && stored.check == .valid)
        #expect(stored.history.map(\.metric) == [5] && stored.redeemedAt == now && stored.lastStatus == 200)
        #expect(stored.notBefore == now + 86_400, "Apple's not-before, kept for the next redemption")
        #expect(try flow.context.store.read { try $0.dueReceipts(at: now + 86_400, limit: 5) }
                    .map(\.due) == [now + 86_400], "the first redemption's due entry was replaced, not added")
        let device = try #require(try flow.storedDevice())
        #expect(device.appleRiskMetric == 5 && device.appleRiskMetricAt == now)

        let (status, body) = try flow.refresh()
        let claims = try DeviceFlow.claims(body)
        #expect(status == 200 && claims["apple_risk_metric"]?.intValue == 5
                    && claims["apple_risk_metric_at"]?.stringValue == now.iso8601, "\(body.jsonText)")
        #expect(claims["risk_score"]?.intValue == Int64(AppRecord.defaultAppleRiskMetricPoints),
                "apple_risk_metric adds the app's points above its threshold")

        flow.fixture.clock.advance(86_400)
        let down = try record(metric: 3)
        #expect(down.crossed && down.previous == 5)
        list = try events()
        #expect(list.count == 2 && list.last?["direction"]?.stringValue == "below"
                    && list.last?["previous_apple_risk_metric"]?.intValue == 5)
        flow.fixture.clock.advance(86_400)
        #expect(try record(metric: 2).crossed == false, "below and staying below: no event")
        #expect(try events().count == 2)
        #expect(try flow.context.store.read { try $0.receiptRecord(keyID: flow.device.keyID) }?.history
                    .map(\.metric) == [5, 3, 2])
        #expect(try flow.context.store.read { try $0.count(.receiptDue) } == 0, "next nil: not scheduled")
        #expect(try flow.context.store.check().isConsistent)
    }

    @Test func withoutAThresholdTheMetricIsStoredAndNothingIsQueued() throws {
        flow.fixture.clock.advance(120)
        let change = try record(metric: 40)
        #expect(!change.crossed && change.threshold == 0)
        #expect(try events().isEmpty)
        #expect(try flow.storedDevice()?.appleRiskMetric == 40)
        let (_, body) = try flow.refresh()
        #expect((try DeviceFlow.claims(body))["risk_score"]?.intValue == 0, "threshold 0: the signal is off")
    }

    /// A receipt about another key, another app, of the wrong type or too old is refused and
    /// changes nothing: the redeemer must not store what Apple did not say about this key.
    @Test func aReceiptNotAboutThisKeyIsRefusedAndNothingChanges() throws {
        try flow.setApp { $0.appleRiskMetricThreshold = 3 }
        let before = try flow.context.store.read { try $0.receiptRecord(keyID: flow.device.keyID) }
        let otherLeaf = try SoftwareDevice.generate()
            .synthetic(clientDataHash: [UInt8](repeating: 0, count: 32), appID: Fixture.appID)
            .build(pki: flow.pki, at: now).credentialCertificate
        let attacks: [(AttestError.Code, (AppAttestReceipt, [UInt8]))] = [
            (.receiptKey, try redeemed(metric: 9, certificate: otherLeaf)),
            (.receiptAppID, try redeemed(metric: 9, appID: "ZZZZZ99999.com.example.app")),
            (.receiptStale, try redeemed(metric: 9, createdAt: now - 600)),
        ]
        for (code, (receipt, raw)) in attacks {
            #expect(throws: AttestError(code, "")) {
                try flow.context.store.write { txn in
                    try AppleRiskMetric.record(receipt, raw: raw, keyID: flow.device.keyID, at: now, next: nil,
                                               in: txn, context: flow.context)
                }
            }
        }
        let attest = try flow.context.store.read { try $0.receiptRecord(keyID: flow.device.keyID) }
        let verified = try ReceiptVerifier(anchor: flow.receipts.root).verify(try #require(attest).receipt, at: now)
        #expect(throws: AttestError(.receiptMalformed, "")) {
            try flow.context.store.write { txn in
                try AppleRiskMetric.record(verified, raw: attest!.receipt, keyID: flow.device.keyID, at: now,
                                           next: nil, in: txn, context: flow.context)
            }
        }
        #expect(try flow.context.store.read { try $0.receiptRecord(keyID: flow.device.keyID) } == before)
        #expect(try flow.storedDevice()?.appleRiskMetric == nil)
        #expect(try events().isEmpty)
    }
}
