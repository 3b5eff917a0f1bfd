import AttestConfig
import AttestCore
import AttestStore

/// Which receipts attest-receipts accepts back from Apple: those chaining to Apple Root CA - G3,
/// and, only for a device whose attestation anchored at a test root, those chaining to a test
/// receipt root (`trust.testReceiptRoots`: the stand-in Apple of the end-to-end suite).
public struct ReceiptVerifiers {
    public let apple: ReceiptVerifier
    public let test: [ReceiptVerifier]

    /// The verifiers given (tests).
    public init(apple: ReceiptVerifier, test: [ReceiptVerifier]) {
        self.apple = apple
        self.test = test
    }

    /// Apple's verifier and one per certificate in `testRootFiles` (relative paths are under the
    /// data directory).
    public init(data: DataDirectory, testRootFiles: [String]) throws {
        apple = try ReceiptVerifier.apple()
        var test = [ReceiptVerifier]()
        for file in testRootFiles {
            let path = file.hasPrefix("/") ? file : data.path + "/" + file
            guard let pem = try FileIO.readText(path) else {
                throw ConfigError(.missing, "receipt trust root \(path) does not exist")
            }
            for cert in try Certificate.certificates(pemEncoded: pem) { test.append(try ReceiptVerifier(anchor: cert)) }
        }
        self.test = test
    }

    /// The verifiers for a device anchored at `anchor`.
    public func verifiers(for anchor: DeviceRecord.Anchor) -> [ReceiptVerifier] {
        anchor == .apple ? [apple] : test
    }

    /// Verifies `der` with the first of `verifiers(for:)` that accepts it; the last refusal
    /// otherwise.
    public func verify(_ der: [UInt8], anchor: DeviceRecord.Anchor, at now: Timestamp) throws -> AppAttestReceipt {
        var failure: any Error = AttestError(.receiptChain, "no receipt root for a device anchored at a test root")
        for verifier in verifiers(for: anchor) {
            do { return try verifier.verify(der, at: now) } catch { failure = error }
        }
        throw failure
    }
}
