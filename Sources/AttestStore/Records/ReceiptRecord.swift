import AttestCore

/// A device key's App Attest receipt: the bytes Apple signed, what checking them found, the
/// fields they carry and the state of their redemption with Apple.
///
/// Key in `receipts`: the 32 raw keyId bytes (as the device's). A receipt to redeem also has
/// an entry in `receipt_due`: nextRedeemAt i64 BE ‖ keyID (empty value), so the redeemer finds
/// what is due with one range scan (`Transaction.put(_:keyID:previousDue:)` keeps it in step).
/// Layout v2 (v1 is `u8 1 ‖ receipt bytes`, read as an unchecked receipt with nothing parsed):
/// ```
/// u8 2 | receipt bytes (CMS, as Apple sent it) | check u8 (0 unchecked, 1 valid, 2 invalid)
///      | reason string | anchor u8 (0 Apple Root CA - G3, 1 a test receipt root)
///      | kind string ("ATTEST", "RECEIPT", "" unknown) | appID string | environment string
///      | createdAt i64 | notBefore i64 | expiresAt i64 (each 0 = unknown)
///      | riskMetric u32 (0xFFFFFFFF = none) | credentialCertSHA256 bytes (32, or 0 unknown)
///      | nextRedeemAt i64 (0 = not scheduled) | failures u16 | lastAttemptAt i64 (0 = never)
///      | lastStatus u16 (0 = no HTTP answer) | lastOutcome string | redeemedAt i64 (0 = never)
///      | history u8 (n ≤ 16) | n × (at i64 | metric u32), oldest first
/// ```
public struct ReceiptRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 2
    public static let recordName = "receipt"

    /// What verifying the receipt found.
    public enum Check: UInt8, Sendable, CaseIterable {
        /// Stored before receipts were verified (a v1 record), or not verified yet.
        case unchecked = 0
        case valid = 1
        case invalid = 2

        public var name: String { String(describing: self) }
    }

    /// The risk metric Apple reported at a time (a redeemed RECEIPT's field 17).
    public struct RiskMetricSample: Sendable, Hashable {
        public var at: Timestamp
        public var metric: UInt32

        public init(at: Timestamp, metric: UInt32) {
            self.at = at
            self.metric = metric
        }
    }

    /// At most this many samples are kept in `history` (the oldest go first).
    public static let maximumHistory = 16

    public var receipt: [UInt8]
    public var check: Check
    /// Why the receipt is `invalid` (empty otherwise).
    public var reason: String
    /// Which root the receipt was verified against (test receipt roots only for test devices).
    public var anchor: DeviceRecord.Anchor
    // Parsed fields (empty / nil when unknown).
    public var kind: String
    public var appID: String
    public var environment: String
    public var createdAt: Timestamp?
    public var notBefore: Timestamp?
    public var expiresAt: Timestamp?
    public var riskMetric: UInt32?
    public var credentialCertSHA256: [UInt8]
    // Redemption with Apple.
    public var nextRedeemAt: Timestamp?
    /// Failed redemptions in a row (reset by a 200).
    public var failures: UInt16
    public var lastAttemptAt: Timestamp?
    /// The HTTP status of the last attempt, 0 when there was none (a timeout, refused).
    public var lastStatus: UInt16
    /// A short text of what the last attempt did ("redeemed", "not before …", an error).
    public var lastOutcome: String
    public var redeemedAt: Timestamp?
    /// Risk metrics received, oldest first, at most `maximumHistory`.
    public var history: [RiskMetricSample]

    public init(receipt: [UInt8], check: Check = .unchecked, reason: String = "", anchor: DeviceRecord.Anchor = .apple,
                kind: String = "", appID: String = "", environment: String = "", createdAt: Timestamp? = nil,
                notBefore: Timestamp? = nil, expiresAt: Timestamp? = nil, riskMetric: UInt32? = nil,
                credentialCertSHA256: [UInt8] = [], nextRedeemAt: Timestamp? = nil) {
        self.receipt = receipt
        self.check = check
        self.reason = reason
        self.anchor = anchor
        self.kind = kind
        self.appID = appID
        self.environment = environment
        self.createdAt = createdAt
        self.notBefore = notBefore
        self.expiresAt = expiresAt
        self.riskMetric = riskMetric
        self.credentialCertSHA256 = credentialCertSHA256
        self.nextRedeemAt = nextRedeemAt
        failures = 0
        lastAttemptAt = nil
        lastStatus = 0
        lastOutcome = ""
        redeemedAt = nil
        history = []
    }

    /// Appends a sample, dropping the oldest beyond `maximumHistory`.
    public mutating func record(metric: UInt32, at: Timestamp) {
        history.append(RiskMetricSample(at: at, metric: metric))
        if history.count > Self.maximumHistory { history.removeFirst(history.count - Self.maximumHistory) }
    }

    public func encode(into w: inout BinaryWriter) {
        w.data(receipt)
        w.u8(check.rawValue)
        w.string(reason)
        w.u8(anchor.rawValue)
        w.string(kind)
        w.string(appID)
        w.string(environment)
        w.i64(createdAt?.seconds ?? 0)
        w.i64(notBefore?.seconds ?? 0)
        w.i64(expiresAt?.seconds ?? 0)
        w.u32(riskMetric ?? UInt32.max)
        w.data(credentialCertSHA256)
        w.i64(nextRedeemAt?.seconds ?? 0)
        w.u16(failures)
        w.i64(lastAttemptAt?.seconds ?? 0)
        w.u16(lastStatus)
        w.string(lastOutcome)
        w.i64(redeemedAt?.seconds ?? 0)
        let kept = history.suffix(Self.maximumHistory)
        w.u8(UInt8(kept.count))
        for sample in kept {
            w.i64(sample.at.seconds)
            w.u32(sample.metric)
        }
    }

    public init(from r: inout BinaryReader) throws {
        guard r.version >= 2 else {
            self.init(receipt: r.rest())
            return
        }
        func time(_ seconds: Int64) -> Timestamp? { seconds == 0 ? nil : Timestamp(seconds: seconds) }
        self.init(receipt: try r.data())
        let c = try r.u8()
        guard let check = Check(rawValue: c) else { throw StoreError(.corrupt, "receipt check \(c)") }
        self.check = check
        reason = try r.string()
        let a = try r.u8()
        guard let anchor = DeviceRecord.Anchor(rawValue: a) else { throw StoreError(.corrupt, "receipt anchor \(a)") }
        self.anchor = anchor
        kind = try r.string()
        appID = try r.string()
        environment = try r.string()
        createdAt = time(try r.i64())
        notBefore = time(try r.i64())
        expiresAt = time(try r.i64())
        let metric = try r.u32()
        riskMetric = metric == UInt32.max ? nil : metric
        credentialCertSHA256 = try r.data()
        nextRedeemAt = time(try r.i64())
        failures = try r.u16()
        lastAttemptAt = time(try r.i64())
        lastStatus = try r.u16()
        lastOutcome = try r.string()
        redeemedAt = time(try r.i64())
        let n = Int(try r.u8())
        guard n <= Self.maximumHistory else { throw StoreError(.corrupt, "receipt history of \(n) samples") }
        history = try (0..<n).map { _ in RiskMetricSample(at: Timestamp(seconds: try r.i64()), metric: try r.u32()) }
    }
}

/// Receipts and their redemption queue (`ReceiptRecord` has the layouts).
///
/// ```
/// receipts     keyID (32)               → ReceiptRecord
/// receipt_due  nextAt i64 BE ‖ keyID    → empty (a receipt to redeem, at its next attempt)
/// ```
extension Transaction {
    public func receiptRecord(keyID: [UInt8]) throws -> ReceiptRecord? {
        try get(.receipts, keyID).map(ReceiptRecord.init(encoded:))
    }

    /// Stores a device key's receipt record and keeps its `receipt_due` entry in step with
    /// `nextRedeemAt`: `previousDue` is the entry to replace (the `nextRedeemAt` of the record
    /// as read; nil when it had none or there was none).
    public func put(_ record: ReceiptRecord, keyID: [UInt8], previousDue: Timestamp? = nil) throws {
        precondition(keyID.count == 32, "keyID is 32 bytes")
        if let previousDue, previousDue != record.nextRedeemAt {
            try delete(.receiptDue, BigEndian.bytes(previousDue.seconds) + keyID)
        }
        if let next = record.nextRedeemAt, next != previousDue {
            try put(.receiptDue, BigEndian.bytes(next.seconds) + keyID, [])
        }
        try put(.receipts, keyID, record.encoded())
    }

    /// Receipts due for redemption at or before `at`, oldest first, at most `limit`.
    public func dueReceipts(at: Timestamp, limit: Int) throws -> [(due: Timestamp, keyID: [UInt8])] {
        var found = [(due: Timestamp, keyID: [UInt8])]()
        guard limit > 0 else { return [] }
        try scan(.receiptDue) { key, _ in
            guard key.count == 40 else { return true }  // not a due key (store check names it)
            let due = Int64(bitPattern: BigEndian.uint64(key))
            guard due <= at.seconds else { return false }
            found.append((Timestamp(seconds: due), Array(key[8...])))
            return found.count < limit
        }
        return found
    }

    /// The receipt's bytes, whatever its record's version.
    public func receipt(keyID: [UInt8]) throws -> [UInt8]? { try receiptRecord(keyID: keyID)?.receipt }
}
