/// An App Attest receipt whose signature and chain `ReceiptVerifier` has checked, with the
/// fields of its payload (`ReceiptPayload`). Attribute numbers, from Apple's "Assessing fraud
/// risk" and real receipts:
///
/// | type | field | form |
/// |---|---|---|
/// | 2 | App ID | UTF-8 `TEAMID.bundle.id` |
/// | 3 | attested public key | the credential certificate, DER |
/// | 4 | client hash | bytes (ATTEST only: mangled in refreshed receipts, never compared) |
/// | 5 | token | opaque base64 text |
/// | 6 | receipt type | `ATTEST` or `RECEIPT` |
/// | 7 | environment (undocumented) | `sandbox` or `production` |
/// | 12 | creation time | ISO 8601 with milliseconds |
/// | 17 | risk metric | decimal text; RECEIPT only |
/// | 19 | not before | ISO 8601; RECEIPT only |
/// | 21 | expiration time | ISO 8601 |
public struct AppAttestReceipt: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The receipt inside an attestation (`attStmt.receipt`).
        case attest = "ATTEST"
        /// A receipt Apple's attestation-data endpoint answered, carrying the risk metric.
        case receipt = "RECEIPT"
    }

    /// The certificate extensions that mark Apple's receipt chain; G3 anchors more than receipts.
    public enum Marker {
        /// On the signing certificate ("Application Attestation Fraud Receipt Signing").
        public static let leaf = "1.2.840.113635.100.12.15"
        /// On the intermediate ("Apple Application Integration CA 5 - G1").
        public static let intermediate = "1.2.840.113635.100.6.2.3"
    }

    public let kind: Kind
    public let appID: String
    /// `sandbox` or `production` (attribute 7); nil when absent.
    public let environment: String?
    /// The credential certificate (DER) of the key the receipt is about.
    public let credentialCertificate: [UInt8]
    public let token: String?
    public let createdAt: Timestamp
    public let notBefore: Timestamp?
    public let expiresAt: Timestamp
    /// Apple's count of keys attested for this app on the device in the last 30 days; RECEIPT only.
    public let riskMetric: Int?

    /// SHA-256 of the credential certificate.
    public var credentialCertificateSHA256: [UInt8] { SHA256.hash(credentialCertificate) }

    /// The fields of a verified payload; throws `.receiptMalformed` when one Apple always sends
    /// is missing or unreadable.
    init(payload p: ReceiptPayload) throws(AttestError) {
        guard let kindText = try p.text(6) else { throw AttestError(.receiptMalformed, "no receipt type (6)") }
        guard let kind = Kind(rawValue: kindText) else {
            throw AttestError(.receiptMalformed, "receipt type \(kindText.prefix(20).debugDescription)")
        }
        guard let appID = try p.text(2), !appID.isEmpty else {
            throw AttestError(.receiptMalformed, "no App ID (2)")
        }
        guard let certificate = p.values[3], !certificate.isEmpty else {
            throw AttestError(.receiptMalformed, "no attested public key (3)")
        }
        guard let created = try p.time(12) else { throw AttestError(.receiptMalformed, "no creation time (12)") }
        guard let expires = try p.time(21) else { throw AttestError(.receiptMalformed, "no expiration time (21)") }
        let riskText = try p.text(17)
        var risk: Int? = nil
        if let riskText {
            guard (1...6).contains(riskText.utf8.count), riskText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let value = Int(riskText) else {
                throw AttestError(.receiptMalformed, "risk metric (17) is not a small whole number")
            }
            risk = value
        }
        let notBefore = try p.time(19)
        if kind == .receipt {
            guard risk != nil else { throw AttestError(.receiptMalformed, "a RECEIPT without a risk metric (17)") }
            guard notBefore != nil else { throw AttestError(.receiptMalformed, "a RECEIPT without not-before (19)") }
        }
        self.kind = kind
        self.appID = appID
        environment = try p.text(7)
        credentialCertificate = Array(certificate)
        token = try p.text(5)
        createdAt = created
        self.notBefore = notBefore
        expiresAt = expires
        riskMetric = risk
    }

    /// What Apple says to check beyond the signature: the App ID, that the receipt is about the
    /// key stored at attestation (`publicKey`: its uncompressed point, as the credential
    /// certificate carries it), that it has not expired at `now` and, for a receipt just
    /// obtained, that it was created at most `maxAge` seconds ago (Apple: five minutes).
    public func check(appID expected: String, publicKey: ArraySlice<UInt8>, at now: Timestamp,
                      maxAge: Int64? = nil) throws(AttestError) {
        guard appID == expected else {
            throw AttestError(.receiptAppID, "receipt is for \(appID.prefix(80).debugDescription), "
                                             + "not \(expected.debugDescription)")
        }
        let fields: CertificateFields
        do { fields = try CertificateFields(derEncoded: credentialCertificate[...]) } catch {
            throw AttestError(.receiptKey, "attested public key (3) is not a certificate: \(error.reason)")
        }
        guard fields.subjectPublicKey.elementsEqual(publicKey) else {
            throw AttestError(.receiptKey, "receipt is about another key")
        }
        guard now < expiresAt else {
            throw AttestError(.receiptStale, "receipt expired at \(expiresAt.iso8601) (now \(now.iso8601))")
        }
        if let maxAge, createdAt.seconds < now.seconds - maxAge {
            throw AttestError(.receiptStale, "receipt created at \(createdAt.iso8601), more than \(maxAge) s "
                                             + "before \(now.iso8601)")
        }
    }
}
