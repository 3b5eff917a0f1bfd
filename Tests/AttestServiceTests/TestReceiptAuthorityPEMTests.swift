import AttestCore
import AttestTesting
import Foundation
import Testing

/// `test-ca/receipts.pem`: the test receipt authority as PEM reads back whole, and OpenSSL's
/// command line signs receipts with it that `ReceiptVerifier` accepts (what a stand-in for
/// Apple's receipt endpoint does).
@Suite struct TestReceiptAuthorityPEMTests {
    let start = Timestamp(iso8601: "2026-01-01T00:00:00Z")!

    @Test func thePEMReadsBackAndItsKeyStillSigns() throws {
        let authority = try TestReceiptAuthority.generate(validFrom: start, validUntil: start + 86_400 * 365)
        let loaded = try TestReceiptAuthority(pemEncoded: authority.pemEncoded)
        #expect(loaded.root.derEncoded == authority.root.derEncoded
                    && loaded.intermediate.derEncoded == authority.intermediate.derEncoded
                    && loaded.signer.derEncoded == authority.signer.derEncoded)
        #expect(authority.pemEncoded.contains(authority.signerKeyPEM))
        let payload = TestReceiptAuthority.payload(TestReceiptAuthority.attributes(
            kind: .attest, appID: "ABCDE12345.com.example.app", credentialCertificate: [0x30, 0x00], createdAt: start))
        let receipt = try ReceiptVerifier(anchor: authority.root).verify(try loaded.receipt(payload), at: start + 60)
        #expect(receipt.kind == .attest && receipt.appID == "ABCDE12345.com.example.app")
        let other = try TestReceiptAuthority.generate(validFrom: start, validUntil: start + 86_400 * 365)
        let mixed = authority.pemEncoded.replacingOccurrences(of: authority.signerKeyPEM, with: other.signerKeyPEM)
        #expect(throws: AttestError.self, "a key that is not the signer's is refused") {
            try TestReceiptAuthority(pemEncoded: mixed)
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func opensslSignsAReceiptTheVerifierAccepts() throws {
        let authority = try TestReceiptAuthority.generate(validFrom: start, validUntil: start + 86_400 * 365)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pem = authority.pemEncoded
        let chain = String(pem[try #require(pem.range(of: "# intermediate certificate"))
                                   .lowerBound...])
        try pem.write(toFile: dir + "/receipts.pem", atomically: true, encoding: .utf8)
        try chain.write(toFile: dir + "/chain.pem", atomically: true, encoding: .utf8)
        let payload = TestReceiptAuthority.payload(TestReceiptAuthority.attributes(
            kind: .receipt, appID: "ABCDE12345.com.example.app", credentialCertificate: [0x30, 0x00],
            createdAt: start, riskMetric: 7, environment: "sandbox"))
        try Data(payload).write(to: URL(fileURLWithPath: dir + "/payload.bin"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["cms", "-sign", "-binary", "-nodetach", "-noattr", "-md", "sha256", "-outform", "DER",
                             "-signer", dir + "/receipts.pem", "-inkey", dir + "/receipts.pem",
                             "-certfile", dir + "/chain.pem", "-in", dir + "/payload.bin", "-out", dir + "/r.der"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let signed = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/r.der")))
        let receipt = try ReceiptVerifier(anchor: authority.root).verify(signed, at: start + 60)
        #expect(receipt.kind == .receipt && receipt.riskMetric == 7 && receipt.environment == "sandbox")
    }
}
