import AttestConfig
import AttestCore
import AttestService
import AttestTesting
import CLISupport

/// The data directory's test CA for software devices (`attestctl init --test-ca`,
/// `attestctl serve --test-ca`).
///
/// ```
/// test-ca/ca.pem            root and intermediate certificates and keys (0600): what attest-device loads
/// test-ca/root.pem          the root certificate only: what trust.testRoots names
/// test-ca/receipts.pem      a receipt chain shaped like Apple's (signer, intermediate, root certificates
///                           and the signer's key, 0600): attest-device signs its receipts with it, and a
///                           stand-in for Apple's receipt endpoint can too (`TestReceiptAuthority`)
/// test-ca/receipt-root.pem  its root certificate only: what trust.testReceiptRoots names
/// ```
/// Creating it also adds `test-ca/root.pem` to `trust.testRoots` and `test-ca/receipt-root.pem`
/// to `trust.testReceiptRoots`, so the server trusts them from then on (and says so loudly at
/// start). A test CA made before receipts were verified gains the receipt files on the next
/// run. Never do this on a production deployment.
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
    let receipts = data.testCADirectory + "/receipts.pem"
    let receiptRoot = data.testCADirectory + "/receipt-root.pem"
    if !FileIO.exists(receipts) {
        let time = now()
        let authority = try TestReceiptAuthority.generate(validFrom: time - 86_400, validUntil: time + 10 * 365 * 86_400)
        try FileIO.writeAtomically(receipts, text: authority.pemEncoded, mode: 0o600)
        try FileIO.writeAtomically(receiptRoot, text: authority.root.pemEncoded, mode: 0o644)
        Output.out("created test receipt authority \(receipts) (root \(receiptRoot))")
    }
    var config = try data.loadConfiguration()
    if !config.testReceiptRoots.contains("test-ca/receipt-root.pem") && !config.testReceiptRoots.contains(receiptRoot) {
        config.testReceiptRoots.append("test-ca/receipt-root.pem")
        try data.save(config)
    }
    if !config.testRoots.contains("test-ca/root.pem") && !config.testRoots.contains(root) {
        config.testRoots.append("test-ca/root.pem")
        try data.save(config)
        Output.out("WARNING: trust.testRoots now includes test-ca/root.pem: software devices signed by it will attest")
    }
    return root
}
