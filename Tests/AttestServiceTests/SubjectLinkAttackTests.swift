import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// Issue 37 item 6, played as the attacker: a device of one of the organization's apps sends
/// another household's subject id, plain, hoping for that household's entitlements. The
/// organization is a new one, with `OrgRecord`'s defaults (what `attestctl org add` makes).
/// Uses only what the code before link policies had, so it runs against that code too (it
/// failed there: the token carried house-17's `premium`).
@Suite struct SubjectLinkAttackTests {
    /// A flow whose organization is recreated with a new organization's defaults, and a
    /// victim household holding `premium`.
    func newOrganizationWithAVictim() throws -> DeviceFlow {
        let flow = try DeviceFlow()
        let now = flow.fixture.clock.now()
        try flow.context.store.write { txn in try txn.put(OrgRecord(name: "acme", tier: .pro, createdAt: now)) }
        _ = try SubjectGrants.grant(org: "acme", subjectID: "house-17", entitlement: "premium", until: nil,
                                    store: flow.context.store, now: now)
        return flow
    }

    func linkedToVictim(_ flow: DeviceFlow) throws -> [[UInt8]] {
        try flow.context.store.read { try $0.subjectDevices(org: "acme", subjectID: "house-17") }
    }

    @Test func aPlainSubjectIdAtValidateGetsNoEntitlementsAndNoLink() throws {
        let flow = try newOrganizationWithAVictim()
        let (status, body) = try flow.attest(flow.device, [("subjectId", "house-17")])
        #expect(status == 200 && body["isValid"]?.boolValue == true,
                "a refused link never fails the attestation: \(body.jsonText)")
        #expect(try DeviceFlow.claims(body)["subscription"] == nil, "no subscription claim for a self-asserted subject")
        #expect(try flow.storedDevice()?.subjectID == "", "the device is stored unlinked")
        #expect(try linkedToVictim(flow).isEmpty, "the victim's subject lists no attacker device")
    }

    @Test func aPlainSubjectIdAtRefreshGetsNoEntitlementsAndNoLink() throws {
        let flow = try newOrganizationWithAVictim()
        try flow.enroll()
        let (status, body) = try flow.refresh([("subjectId", "house-17")])
        #expect(status == 200, "a refused link never fails the refresh: \(body.jsonText)")
        #expect(try DeviceFlow.claims(body)["subscription"] == nil, "no subscription claim for a self-asserted subject")
        #expect(try flow.storedDevice()?.subjectID == "" && linkedToVictim(flow).isEmpty, "nothing was linked")
    }
}
