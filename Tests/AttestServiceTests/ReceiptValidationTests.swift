import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// Validate's check of the attestation's receipt (`ReceiptCheck`): a valid one is stored with
/// its fields and scheduled for redemption; anything else is stored `invalid` with its reason,
/// logged and scored `receipt_invalid`, and never fails the attestation nor becomes `valid`.
@Suite struct ReceiptValidationTests {
    func receipt(_ flow: DeviceFlow) throws -> ReceiptRecord {
        try #require(try flow.context.store.read { try $0.receiptRecord(keyID: flow.device.keyID) })
    }

    /// Validates `flow.device` with its attestation adjusted; the answer must be a 200.
    @discardableResult
    func validate(_ flow: DeviceFlow, receipt: [UInt8]? = nil,
                  adjust: (inout SyntheticAttestation) -> Void = { _ in }) throws -> JSONValue {
        let (status, body) = flow.post(.validate, try flow.validateBody(challenge: try flow.fixture.challenge(),
                                                                        receipt: receipt, adjust: adjust))
        #expect(status == 200, "a receipt never fails the attestation: \(body.jsonText)")
        return body
    }

    @Test func aValidReceiptIsStoredWithItsFieldsAndScheduled() throws {
        let flow = try DeviceFlow()
        let body = try validate(flow)
        let stored = try receipt(flow), now = flow.fixture.clock.now()
        #expect(stored.check == .valid && stored.reason.isEmpty && stored.anchor == .apple)
        #expect(stored.kind == "ATTEST" && stored.appID == Fixture.appID && stored.environment == "production")
        #expect(stored.createdAt == now && stored.expiresAt == now + 90 * 86_400 && stored.riskMetric == nil)
        #expect(stored.credentialCertSHA256.count == 32)
        #expect(stored.nextRedeemAt == now + 60, "the first redemption soon after attestation")
        #expect(try flow.context.store.read { try $0.dueReceipts(at: now + 60, limit: 5) }.map(\.keyID)
                    == [flow.device.keyID])
        #expect(try flow.storedDevice()?.receiptCheck == .valid)
        let claims = try DeviceFlow.claims(body)
        #expect(claims["apple_risk_metric"] == .null && claims["apple_risk_metric_at"] == .null,
                "null until a receipt was redeemed")
        #expect(body["deviceIntelligence"]?["riskScore"]?.intValue == 0, "a valid receipt adds nothing")
        #expect(!flow.fixture.logs.contains { $0.contains("receipt") }, "\(flow.fixture.logs)")
    }

    /// The attacks: each is stored `invalid` with the check that refused it, is not scheduled,
    /// and scores `receipt_invalid` (+10) on the device.
    @Test(arguments: ["receipt_app_id", "receipt_key"]) func aReceiptForAnotherAppOrKeyIsInvalid(_ code: String) throws {
        let flow = try DeviceFlow()
        let other = try SoftwareDevice.generate()
        // Field 3: a credential certificate of another key, from the flow's own PKI.
        let otherLeaf = try other.synthetic(clientDataHash: [UInt8](repeating: 0, count: 32), appID: Fixture.appID)
            .build(pki: flow.pki, at: flow.fixture.clock.now()).credentialCertificate
        let body = try validate(flow) { attestation in
            if code == "receipt_app_id" {
                attestation.receiptAppID = "ZZZZZ99999.com.example.app"
            } else {
                attestation.receiptCredentialCertificate = otherLeaf
            }
        }
        let stored = try receipt(flow)
        #expect(stored.check == .invalid && stored.reason.hasPrefix(code + ":"), "\(code): \(stored.reason)")
        #expect(stored.nextRedeemAt == nil, "an invalid receipt is not redeemed")
        #expect(try flow.context.store.read { try $0.count(.receiptDue) } == 0)
        #expect(try flow.storedDevice()?.receiptCheck == .invalid)
        #expect(body["deviceIntelligence"]?["riskScore"]?.intValue == 10, "receipt_invalid: \(body.jsonText)")
        #expect(flow.fixture.logs.contains { $0.contains("receipt invalid: \(code)") }, "\(flow.fixture.logs)")
        // Refresh scores it too, from the device record alone.
        let (status, refreshed) = try flow.refresh()
        let claims = try DeviceFlow.claims(refreshed)
        #expect(status == 200 && claims["risk_score"]?.intValue == 10)
    }

    /// A receipt signed by a configured test receipt root proves nothing about a device Apple's
    /// root attested: only Apple's receipt root counts for it.
    @Test func aTestRootReceiptForAnAppleAnchoredDeviceIsInvalid() throws {
        let start = Timestamp(iso8601: "2026-01-01T00:00:00Z")!
        let testReceipts = try TestReceiptAuthority.generate(validFrom: start, validUntil: start + 3 * 365 * 86_400)
        let flow = try DeviceFlow(extraTestReceiptRoots: [testReceipts.root])
        try validate(flow) { $0.receiptAuthority = testReceipts }
        let stored = try receipt(flow)
        #expect(try flow.storedDevice()?.anchor == .apple)
        #expect(stored.check == .invalid && stored.reason.hasPrefix("receipt_chain"), "\(stored.reason)")
    }

    @Test func aTestRootDevicesReceiptVerifiesAgainstTheTestReceiptRootOnly() throws {
        let flow = try DeviceFlow(pkiAsTestRoot: true)
        try validate(flow)
        let stored = try receipt(flow)
        #expect(try flow.storedDevice()?.anchor == .testRoot)
        #expect(stored.check == .valid && stored.anchor == .testRoot, "\(stored.reason)")

        // Signed by a chain shaped like Apple's that nobody configured: invalid.
        let start = Timestamp(iso8601: "2026-01-01T00:00:00Z")!
        let stranger = try TestReceiptAuthority.generate(validFrom: start, validUntil: start + 3 * 365 * 86_400)
        let second = try DeviceFlow(pkiAsTestRoot: true)
        try validate(second) { $0.receiptAuthority = stranger }
        #expect(try receipt(second).check == .invalid)
    }

    @Test func anEmptyOrGarbageReceiptIsInvalidAndTheAttestationStands() throws {
        for (bytes, reason) in [([UInt8](), "no receipt in the attestation"),
                                (Array("AttestEdge synthetic receipt".utf8), "receipt_malformed")] {
            let flow = try DeviceFlow()
            let body = try validate(flow, receipt: bytes)
            let stored = try receipt(flow)
            #expect(stored.check == .invalid && stored.reason.hasPrefix(reason), "\(stored.reason)")
            #expect(stored.receipt == bytes)
            #expect(body["isValid"]?.boolValue == true)
            #expect(flow.fixture.logs.contains { $0.contains("receipt \(bytes.isEmpty ? "absent" : "invalid")") },
                    "\(flow.fixture.logs)")
        }
    }
}
