import AttestCore
import AttestStore

/// The one rule for which roots verify a device's receipt, at validate (`ReceiptCheck`) and for
/// the receipts Apple answers (attest-receipts, `attestctl receipts try`): Apple Root CA - G3
/// for every device; a test receipt root (`trust.testReceiptRoots`: software devices, the
/// stand-in Apple of the end-to-end suite) only for a device whose attestation a test root
/// verified, tried first there (its chain is the one cached).
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

    /// The verifiers for a device anchored at `anchor`, in the order they are tried, each with
    /// the anchor a receipt it accepts is recorded under.
    public func verifiers(for anchor: DeviceRecord.Anchor) -> [(ReceiptVerifier, DeviceRecord.Anchor)] {
        (anchor == .testRoot ? test.map { ($0, .testRoot) } : []) + [(apple, .apple)]
    }

    /// Verifies `der` with the first of `verifiers(for:)` that accepts it, returning the receipt
    /// and the root that verified it; the last refusal otherwise.
    public func verifyAnchored(_ der: [UInt8], anchor: DeviceRecord.Anchor,
                               at now: Timestamp) throws(AttestError) -> (AppAttestReceipt, DeviceRecord.Anchor) {
        var failure = AttestError(.receiptChain, "no receipt root")
        for (verifier, root) in verifiers(for: anchor) {
            do { return (try verifier.verify(der, at: now), root) } catch { failure = error }
        }
        throw failure
    }

    /// `verifyAnchored` without the root.
    public func verify(_ der: [UInt8], anchor: DeviceRecord.Anchor,
                       at now: Timestamp) throws(AttestError) -> AppAttestReceipt {
        try verifyAnchored(der, anchor: anchor, at: now).0
    }
}
