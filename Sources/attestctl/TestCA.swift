import AttestConfig
import AttestCore
import AttestService
import AttestTesting
import CLISupport

/// The data directory's test CA for software devices (`attestctl init --test-ca`,
/// `attestctl serve --test-ca`).
///
/// ```
/// test-ca/ca.pem    root and intermediate certificates and keys (0600): what attest-device loads
/// test-ca/root.pem  the root certificate only: what trust.testRoots names
/// ```
/// Creating it also adds `test-ca/root.pem` to `trust.testRoots`, so the server trusts it
/// from then on (and says so loudly at start). Never do this on a production deployment.
@discardableResult
func ensureTestCA(_ data: DataDirectory) throws -> String {
    let bundle = data.testCADirectory + "/ca.pem"
    let root = data.testCADirectory + "/root.pem"
    if !FileIO.exists(bundle) {
        try FileIO.makeDirectories(data.testCADirectory)
        let time = now()
        let pki = try TestPKI.generate(name: "AttestEdge Test CA", validFrom: time - 86_400,
                                       validUntil: time + 10 * 365 * 86_400)
        try FileIO.writeAtomically(bundle, text: pki.pemEncoded, mode: 0o600)
        try FileIO.writeAtomically(root, text: pki.rootCertificate.pemEncoded, mode: 0o644)
        Output.out("created test CA \(bundle) (root \(root))")
    }
    var config = try data.loadConfiguration()
    if !config.testRoots.contains("test-ca/root.pem") && !config.testRoots.contains(root) {
        config.testRoots.append("test-ca/root.pem")
        try data.save(config)
        Output.out("WARNING: trust.testRoots now includes test-ca/root.pem: software devices signed by it will attest")
    }
    return root
}
