import AttestCore
import AttestService
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

    /// A worker's verifiers (`ServiceContext.receiptVerifier`, `testReceiptVerifiers`).
    public init(_ ctx: ServiceContext) {
        self.init(apple: ctx.receiptVerifier, test: ctx.testReceiptVerifiers)
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
