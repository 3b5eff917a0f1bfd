/// The one error type of `AttestCore`.
///
/// `code` is stable and is what callers and tests compare: two errors are equal when their
/// codes are equal. `reason` is for logs and says what exactly went wrong; `file` and `line`
/// name the throwing site.
public struct AttestError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable failure codes. Verification steps have one code each, in Apple's order.
    public enum Code: String, Sendable, CaseIterable {
        // Parsing.
        case cborMalformed = "cbor_malformed"
        case cborLimitExceeded = "cbor_limit_exceeded"
        case derMalformed = "der_malformed"
        case base64Invalid = "base64_invalid"
        case jsonMalformed = "json_malformed"
        case authenticatorDataMalformed = "authenticator_data_malformed"
        case publicKeyInvalid = "public_key_invalid"
        // Attestation steps (Apple's validation guide).
        case format = "format"
        case certificateChain = "certificate_chain"
        case nonce = "nonce"
        case keyID = "key_id"
        case rpIDHash = "rp_id_hash"
        case counter = "counter"
        case environment = "environment"
        case credentialID = "credential_id"
        // Assertion steps.
        case assertionFormat = "assertion_format"
        case signature = "signature"
        // Receipts (`ReceiptVerifier`, `AppAttestReceipt.check`).
        case receiptMalformed = "receipt_malformed"
        case receiptChain = "receipt_chain"
        case receiptSignature = "receipt_signature"
        case receiptAppID = "receipt_app_id"
        case receiptKey = "receipt_key"
        case receiptStale = "receipt_stale"
        // Crypto and keys.
        case crypto = "crypto"
        case keyInvalid = "key_invalid"
    }

    public let code: Code
    public let reason: String
    public let file: String
    public let line: Int

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    public static func == (lhs: AttestError, rhs: AttestError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { "\(code.rawValue): \(reason)" }
}
