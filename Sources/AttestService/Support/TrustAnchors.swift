import AttestCore

/// The trust anchors of a deployment: Apple's App Attestation Root CA, plus test roots only
/// when the configuration (`trust.testRoots`) or the command line names them.
public enum TrustAnchors {
    /// Apple's root and the named test roots. `warn` is called once per test root: a server
    /// that accepts test devices must say so loudly.
    public static func load(data: DataDirectory, configuration: Configuration, extraPEMFiles: [String] = [],
                            warn: (String) -> Void) throws -> [Certificate] {
        var anchors = [try AppleAppAttestationRoot.certificate()]
        for file in configuration.testRoots + extraPEMFiles {
            let path = file.hasPrefix("/") ? file : data.path + "/" + file
            guard let pem = try FileIO.readText(path) else {
                throw Configuration.Problem(message: "trust root \(path) does not exist")
            }
            for cert in try Certificate.certificates(pemEncoded: pem) {
                warn("WARNING: trusting TEST root \"\(cert.subject)\" from \(path): software test devices will pass attestation. Never do this in production.")
                anchors.append(cert)
            }
        }
        return anchors
    }
}
