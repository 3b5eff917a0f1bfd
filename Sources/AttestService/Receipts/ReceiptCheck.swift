import AttestCore
import AttestStore

/// Validate's check of the receipt inside an attestation (`attStmt.receipt`), and the record
/// stored from it. Apple's validation steps do not include the receipt, so whatever this finds
/// never fails the attestation: an invalid or empty receipt is stored with its reason, logged,
/// counted (`attestedge_receipt_verifications_total`) and becomes the risk signal
/// `receipt_invalid` (through `DeviceRecord.receiptCheck`).
///
/// A receipt is valid when its CMS signature chains to Apple Root CA - G3 (`ReceiptVerifier`,
/// its signing chain cached per worker) — or, only for a device whose attestation a test root
/// verified, to a test receipt root (`trust.testReceiptRoots`) — and it is an ATTEST receipt
/// whose App ID is the app's, whose field 3 is the attestation's credential certificate (the
/// same bytes, so the same key), created no later than `maxSkewSeconds` after now and no
/// earlier than `maxAgeSeconds` before it, and not expired.
public enum ReceiptCheck {
    /// How far in the future a receipt's creation time may be (clock skew).
    static let maxSkewSeconds: Int64 = 300
    /// How old an attestation's receipt may be: the device sends the attestation right after
    /// `attestKey`, with a challenge that lives minutes, so a day is generous.
    static let maxAgeSeconds: Int64 = 86_400

    enum Result: Equatable {
        case valid
        case invalid(String)
        case absent

        /// The `result` label of `attestedge_receipt_verifications_total`.
        var name: String {
            switch self {
            case .valid: return "valid"
            case .invalid: return "invalid"
            case .absent: return "absent"
            }
        }
    }

    /// Verifies `raw`, the receipt of an attestation validate has just verified (anchored at
    /// `anchor`, with `credentialCertificate` its x5c[0]), and returns the record to store
    /// under its keyId and what was found (the caller logs and counts it).
    static func atValidate(_ raw: [UInt8], credentialCertificate: ArraySlice<UInt8>, publicKey: [UInt8],
                           appID: String, anchor: DeviceRecord.Anchor, at now: Timestamp,
                           _ ctx: ServiceContext) -> (record: ReceiptRecord, result: Result) {
        guard !raw.isEmpty else {
            return (ReceiptRecord(receipt: [], check: .invalid, reason: "no receipt in the attestation"), .absent)
        }
        let receipt: AppAttestReceipt, receiptAnchor: DeviceRecord.Anchor
        do {
            (receipt, receiptAnchor) = try verify(raw, deviceAnchor: anchor, at: now, ctx)
        } catch {
            let reason = "\(error.code.rawValue): \(error.reason)"
            return (ReceiptRecord(receipt: raw, check: .invalid, reason: reason), .invalid(reason))
        }
        var record = Self.record(receipt, raw: raw, anchor: receiptAnchor)
        do {
            try check(receipt, credentialCertificate: credentialCertificate, publicKey: publicKey, appID: appID,
                      at: now)
        } catch {
            record.check = .invalid
            record.reason = "\(error.code.rawValue): \(error.reason)"
            return (record, .invalid(record.reason))
        }
        // First redeemed `receipts.firstDelaySeconds` after validate (never past its expiry).
        record.nextRedeemAt = ctx.configuration.receiptSchedule.first(attestedAt: now, expiresAt: receipt.expiresAt)
        return (record, .valid)
    }

    /// Verifies a receipt's signature and chain for a device anchored at `deviceAnchor`: Apple
    /// Root CA - G3 for every device; a test receipt root (`trust.testReceiptRoots`) only for a
    /// device whose attestation a test root verified (tried first there: its chain is the one
    /// cached). Returns the receipt and the root that verified it; throws the last failure.
    /// The rule itself is `ReceiptVerifiers`, which the redeemer uses too.
    public static func verify(_ raw: [UInt8], deviceAnchor: DeviceRecord.Anchor, at now: Timestamp,
                              _ ctx: ServiceContext) throws(AttestError) -> (AppAttestReceipt, DeviceRecord.Anchor) {
        try ReceiptVerifiers(ctx).verifyAnchored(raw, anchor: deviceAnchor, at: now)
    }

    /// What Apple says to check of an attestation's receipt once its signature verified.
    /// (`publicKey`: the attested key's uncompressed point, which the certificate carries.)
    static func check(_ receipt: AppAttestReceipt, credentialCertificate: ArraySlice<UInt8>, publicKey: [UInt8],
                      appID: String, at now: Timestamp) throws(AttestError) {
        guard receipt.kind == .attest else {
            throw AttestError(.receiptMalformed, "an attestation's receipt of type \(receipt.kind.rawValue)")
        }
        try receipt.check(appID: appID, publicKey: publicKey[...], at: now, maxAge: maxAgeSeconds)
        guard receipt.credentialCertificateSHA256 == SHA256.hash(credentialCertificate) else {
            throw AttestError(.receiptKey, "field 3 is another certificate of the same key")
        }
        guard receipt.createdAt.seconds <= now.seconds + maxSkewSeconds else {
            throw AttestError(.receiptStale, "receipt created at \(receipt.createdAt.iso8601), after \(now.iso8601)")
        }
    }

    /// The stored form of a verified receipt's fields (`check` valid; the caller changes it
    /// when a later check fails).
    static func record(_ receipt: AppAttestReceipt, raw: [UInt8], anchor: DeviceRecord.Anchor) -> ReceiptRecord {
        ReceiptRecord(receipt: raw, check: .valid, anchor: anchor, kind: receipt.kind.rawValue, appID: receipt.appID,
                      environment: receipt.environment ?? "", createdAt: receipt.createdAt,
                      notBefore: receipt.notBefore, expiresAt: receipt.expiresAt,
                      riskMetric: receipt.riskMetric.map { UInt32(clamping: $0) },
                      credentialCertSHA256: receipt.credentialCertificateSHA256)
    }
}
