import AttestCore

/// The trust anchors of a deployment: Apple's App Attestation Root CA, plus test roots only
/// when the configuration (`trust.testRoots`) or the command line names them. The two are
/// kept apart so a device records which one verified it (tokens say `attest: "test_root"`
/// for the second).
public struct TrustAnchors {
    /// Anchors of real devices: Apple's root (tests substitute their own PKI's root).
    public var hardware: [Certificate]
    /// Test roots: software test devices only.
    public var test: [Certificate]
    /// Test receipt roots (`trust.testReceiptRoots`): the receipts of test-root devices only.
    public var testReceipt: [Certificate]

    public init(hardware: [Certificate], test: [Certificate] = [], testReceipt: [Certificate] = []) {
        self.hardware = hardware
        self.test = test
        self.testReceipt = testReceipt
    }

    /// Apple's root and the named test roots. `warn` is called once per test root: a server
    /// that accepts test devices must say so loudly.
    public static func load(data: DataDirectory, configuration: Configuration, extraPEMFiles: [String] = [],
                            warn: (String) -> Void) throws -> TrustAnchors {
        var anchors = TrustAnchors(hardware: [try AppleAppAttestationRoot.certificate()])
        for file in configuration.testRoots + extraPEMFiles {
            let path = file.hasPrefix("/") ? file : data.path + "/" + file
            guard let pem = try FileIO.readText(path) else {
                throw ConfigError(.missing, "trust root \(path) does not exist")
            }
            for cert in try Certificate.certificates(pemEncoded: pem) {
                warn("WARNING: trusting TEST root \"\(cert.subject)\" from \(path): software test devices will pass "
                     + "attestation (their tokens say attest: \"test_root\"). Never do this in production.")
                anchors.test.append(cert)
            }
        }
        for file in configuration.testReceiptRoots {
            let path = file.hasPrefix("/") ? file : data.path + "/" + file
            guard let pem = try FileIO.readText(path) else {
                throw ConfigError(.missing, "test receipt root \(path) does not exist")
            }
            anchors.testReceipt += try Certificate.certificates(pemEncoded: pem)
        }
        return anchors
    }
}
