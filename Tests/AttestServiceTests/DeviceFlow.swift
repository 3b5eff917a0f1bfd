@testable import AttestConfig
import AttestCore
import AttestService
import AttestStore
import AttestTesting
import FastCGI

/// A fixture trusting a fresh test PKI, with a software device that talks to the endpoints
/// in-process (the same bodies the iOS SDK sends).
final class DeviceFlow {
    let fixture: Fixture
    let pki: TestPKI
    /// Signs the devices' receipts: trusted as Apple's receipt root when the PKI stands for
    /// Apple's, as a test receipt root when the PKI is a test root.
    let receipts: TestReceiptAuthority
    var device: SoftwareDevice

    /// `pkiAsTestRoot`: trust the test PKI as a configured test root beside Apple's root, as
    /// `trust.testRoots` does, instead of as a hardware anchor.
    init(tier: Tier = .pro, policy: EnvironmentPolicy = .production, rate: UInt32 = 0, pkiAsTestRoot: Bool = false,
         subjectLinks: SubjectLinkPolicy = .asserted, extraTestReceiptRoots: [Certificate] = [],
         configure: (inout Configuration) -> Void = { _ in }) throws {
        let start = Timestamp(iso8601: "2026-01-01T00:00:00Z")!
        pki = try TestPKI.generate(validFrom: start, validUntil: start + 3 * 365 * 86_400)
        receipts = try TestReceiptAuthority.generate(validFrom: start, validUntil: start + 3 * 365 * 86_400)
        fixture = try Fixture(tier: tier, policy: policy,
                              trustAnchors: pkiAsTestRoot ? [try AppleAppAttestationRoot.certificate()]
                                                          : [pki.rootCertificate],
                              testRoots: pkiAsTestRoot ? [pki.rootCertificate] : [],
                              receiptAnchor: pkiAsTestRoot ? nil : receipts.root,
                              testReceiptRoots: (pkiAsTestRoot ? [receipts.root] : []) + extraTestReceiptRoots,
                              configure: configure, rate: rate,
                              subjectLinks: subjectLinks)
        device = try SoftwareDevice.generate()
    }

    var context: ServiceContext { fixture.context }

    func validateBody(challenge: String, device: SoftwareDevice? = nil, environment: AppAttestEnvironment = .production,
                      teamID: String = Fixture.teamID, bundleID: String = Fixture.bundleID, receipt: [UInt8]? = nil,
                      appVersion: String = "2.1.0", extra: [(String, JSONValue)] = [], tamper: ((inout [UInt8]) -> Void)? = nil,
                      adjust: (inout SyntheticAttestation) -> Void = { _ in }) throws -> JSONValue {
        let d = device ?? self.device
        let cdh = SHA256.hash(challenge.utf8)
        var synthetic = d.synthetic(clientDataHash: cdh, appID: teamID + "." + bundleID, environment: environment)
        // A receipt signed by the flow's receipt authority, unless the test gives the bytes.
        if let receipt { synthetic.receipt = receipt } else { synthetic.receiptAuthority = receipts }
        adjust(&synthetic)
        let built = try synthetic.build(pki: pki, at: fixture.clock.now())
        let keyID = built.keyID
        var object = built.attestationObject
        tamper?(&object)
        return .object([
            ("challenge", .string(challenge)), ("keyId", .string(Base64.encode(keyID))),
            ("attestationObject", .string(Base64.encode(object))), ("clientDataHash", .string(Base64.encode(cdh))),
            ("bundleId", .string(bundleID)), ("teamId", .string(teamID)),
            ("deviceModel", "iPhone15,2"), ("osVersion", "18.0"), ("appVersion", .string(appVersion)), ("appBuildNumber", "42"),
            ("platform", "iOS"),
        ] + extra)
    }

    /// A refresh body signed by `device`, which need not be enrolled.
    static func refreshBody(for device: SoftwareDevice, challenge: String) -> JSONValue {
        let cdh = SHA256.hash(challenge.utf8)
        let assertion = (try? device.assertion(clientDataHash: cdh, appID: Fixture.appID, counter: 1)) ?? []
        return .object([
            ("keyId", .string(Base64.encode(device.keyID))), ("assertion", .string(Base64.encode(assertion))),
            ("clientDataHash", .string(Base64.encode(cdh))), ("challenge", .string(challenge)),
        ])
    }

    func refreshBody(challenge: String, counter: UInt32? = nil) throws -> JSONValue {
        let cdh = SHA256.hash(challenge.utf8)
        let assertion: [UInt8]
        if let counter {
            assertion = try device.assertion(clientDataHash: cdh, appID: Fixture.appID, counter: counter)
        } else {
            assertion = try device.assert(clientDataHash: cdh, appID: Fixture.appID)
        }
        return .object([
            ("keyId", .string(Base64.encode(device.keyID))), ("assertion", .string(Base64.encode(assertion))),
            ("clientDataHash", .string(Base64.encode(cdh))), ("challenge", .string(challenge)),
        ])
    }

    func post(_ endpoint: Endpoint, _ body: JSONValue,
              headers: [String: String] = Fixture.appHeaders) -> (Int, JSONValue) {
        fixture.call(endpoint, body: body.jsonText, headers: headers)
    }

    /// Enrolls `device` and checks it worked.
    @discardableResult
    func enroll() throws -> JSONValue {
        let (status, body) = post(.validate, try validateBody(challenge: try fixture.challenge()))
        guard status == 200 else { throw FixtureError("enroll failed: \(status) \(body.jsonText)") }
        return body
    }

    func storedDevice() throws -> DeviceRecord? {
        try context.store.read { try $0.device(keyID: self.device.keyID) }
    }
}
