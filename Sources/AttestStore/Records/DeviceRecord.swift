import AttestCore

/// An attested device key: what refresh reads and advances on every request.
///
/// Key: the 32 raw keyId bytes. The receipt lives in `receipts` under the same key, so this
/// record stays small. Layout v4 (v3 is the same without the last three fields, read as "no
/// metric yet", receipt unchecked; v2 also without `lastRiskScore`, read as "no score yet"; v1 also without
/// `anchor`, read as `apple`):
/// ```
/// u8 1 | deviceID string | appID string | publicKey bytes (65, X9.62) | counter u32
///      | environment u8 (0 production, 1 development) | status u8 (0 active, 1 revoked, 2 invalidated)
///      | operatorFlags u8 (bit 0 jailbreak flagged, bit 1 blocked) | attestationCount u32
///      | failedAssertions u32 | createdAt i64 | lastAttestedAt i64 | lastSeenAt i64
///      | fingerprint string | subjectID string | deviceModel string | osVersion string
///      | appVersion string | appBuildNumber string | platform string
///      | validationCategory u32 (0xFFFFFFFF = absent) | bundleVersion string
///      | anchor u8 (0 Apple's root, 1 a configured test root)
///      | lastRiskScore u8 (the score of the last token issued; 0xFF = none yet)
///      | appleRiskMetric u32 (0xFFFFFFFF = none yet) | appleRiskMetricAt i64 (0 = none yet)
///      | receiptCheck u8 (0 unchecked, 1 valid, 2 invalid: `ReceiptRecord.Check`)
/// ```
/// `operatorFlags` mirrors the flags of the device's lineage (`LineageRecord`, which holds
/// them for every key of a fingerprint), so refresh can refuse a blocked key before it
/// verifies anything.
public struct DeviceRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 4
    public static let recordName = "device"

    public enum Status: UInt8, Sendable, CaseIterable {
        case active = 0
        /// Revoked by an operator: refresh answers 403.
        case revoked = 1
        /// A failed assertion invalidated the attestation: refresh answers 409 until re-attested.
        case invalidated = 2

        public var name: String { self == .active ? "active" : self == .revoked ? "revoked" : "invalidated" }
    }

    /// Which trust anchor the attestation's chain ended at. Tokens say `attest: "hardware"`
    /// only for Apple's root, so a backend can refuse devices verified through a test root.
    public enum Anchor: UInt8, Sendable, CaseIterable {
        case apple = 0
        case testRoot = 1
    }

    public struct OperatorFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let jailbreak = OperatorFlags(rawValue: 1)
        public static let blocked = OperatorFlags(rawValue: 2)
    }

    /// Metadata the client reports; never verified, stored as sent.
    public struct Metadata: Sendable, Hashable {
        public var deviceModel = "", osVersion = "", appVersion = "", appBuildNumber = "", platform = ""
        public init(deviceModel: String = "", osVersion: String = "", appVersion: String = "",
                    appBuildNumber: String = "", platform: String = "") {
            self.deviceModel = deviceModel
            self.osVersion = osVersion
            self.appVersion = appVersion
            self.appBuildNumber = appBuildNumber
            self.platform = platform
        }
    }

    public var keyID: [UInt8]
    public var deviceID: String
    public var appID: String
    public var publicKey: [UInt8]
    public var counter: UInt32
    public var environment: AppAttestEnvironment
    public var status: Status
    public var operatorFlags: OperatorFlags
    public var attestationCount: UInt32
    public var failedAssertions: UInt32
    public var createdAt: Timestamp
    public var lastAttestedAt: Timestamp
    public var lastSeenAt: Timestamp
    public var fingerprint: String
    public var subjectID: String
    public var metadata: Metadata
    public var validationCategory: UInt32?
    public var bundleVersion: String
    public var anchor: Anchor
    /// The risk score of the last token issued for this key (a change of category queues
    /// `device.high_risk`); `nil` before the first.
    public var lastRiskScore: UInt8?
    /// Apple's risk metric from the key's last redeemed receipt (`ReceiptRecord`), copied here
    /// so that refresh, which reads the device anyway, puts it in tokens without another read.
    public var appleRiskMetric: UInt32?
    /// When Apple issued that receipt (its creation time); nil with the metric.
    public var appleRiskMetricAt: Timestamp?
    /// What checking the key's receipt last found (its `ReceiptRecord.check`), copied here for
    /// the risk signal `receipt_invalid`, which refresh scores without reading the receipt.
    public var receiptCheck = ReceiptRecord.Check.unchecked

    public init(keyID: [UInt8], deviceID: String, appID: String, publicKey: [UInt8], counter: UInt32 = 0,
                environment: AppAttestEnvironment, status: Status = .active, operatorFlags: OperatorFlags = [],
                attestationCount: UInt32 = 1, failedAssertions: UInt32 = 0, createdAt: Timestamp,
                lastAttestedAt: Timestamp? = nil, lastSeenAt: Timestamp? = nil, fingerprint: String = "",
                subjectID: String = "", metadata: Metadata = Metadata(), validationCategory: UInt32? = nil,
                bundleVersion: String = "", anchor: Anchor = .apple) {
        self.keyID = keyID
        self.deviceID = deviceID
        self.appID = appID
        self.publicKey = publicKey
        self.counter = counter
        self.environment = environment
        self.status = status
        self.operatorFlags = operatorFlags
        self.attestationCount = attestationCount
        self.failedAssertions = failedAssertions
        self.createdAt = createdAt
        self.lastAttestedAt = lastAttestedAt ?? createdAt
        self.lastSeenAt = lastSeenAt ?? createdAt
        self.fingerprint = fingerprint
        self.subjectID = subjectID
        self.metadata = metadata
        self.validationCategory = validationCategory
        self.bundleVersion = bundleVersion
        self.anchor = anchor
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(deviceID)
        w.string(appID)
        w.data(publicKey)
        w.u32(counter)
        w.u8(environment == .production ? 0 : 1)
        w.u8(status.rawValue)
        w.u8(operatorFlags.rawValue)
        w.u32(attestationCount)
        w.u32(failedAssertions)
        w.i64(createdAt.seconds)
        w.i64(lastAttestedAt.seconds)
        w.i64(lastSeenAt.seconds)
        w.string(fingerprint)
        w.string(subjectID)
        w.string(metadata.deviceModel)
        w.string(metadata.osVersion)
        w.string(metadata.appVersion)
        w.string(metadata.appBuildNumber)
        w.string(metadata.platform)
        w.u32(validationCategory ?? UInt32.max)
        w.string(bundleVersion)
        w.u8(anchor.rawValue)
        w.u8(lastRiskScore ?? 0xFF)
        w.u32(appleRiskMetric ?? UInt32.max)
        w.i64(appleRiskMetricAt?.seconds ?? 0)
        w.u8(receiptCheck.rawValue)
    }

    /// `keyID` is not part of the value (it is the key): `Transaction.device(keyID:)` sets it.
    public init(from r: inout BinaryReader) throws {
        keyID = []
        deviceID = try r.string()
        appID = try r.string()
        publicKey = try r.data()
        counter = try r.u32()
        switch try r.u8() {
        case 0: environment = .production
        case 1: environment = .development
        case let e: throw StoreError(.corrupt, "environment \(e)")
        }
        let s = try r.u8()
        guard let status = Status(rawValue: s) else { throw StoreError(.corrupt, "device status \(s)") }
        self.status = status
        operatorFlags = OperatorFlags(rawValue: try r.u8())
        attestationCount = try r.u32()
        failedAssertions = try r.u32()
        createdAt = Timestamp(seconds: try r.i64())
        lastAttestedAt = Timestamp(seconds: try r.i64())
        lastSeenAt = Timestamp(seconds: try r.i64())
        fingerprint = try r.string()
        subjectID = try r.string()
        metadata = Metadata(deviceModel: try r.string(), osVersion: try r.string(), appVersion: try r.string(),
                            appBuildNumber: try r.string(), platform: try r.string())
        let category = try r.u32()
        validationCategory = category == UInt32.max ? nil : category
        bundleVersion = try r.string()
        if r.version >= 2 {
            let a = try r.u8()
            guard let anchor = Anchor(rawValue: a) else { throw StoreError(.corrupt, "device anchor \(a)") }
            self.anchor = anchor
        } else {
            anchor = .apple
        }
        if r.version >= 3 {
            let score = try r.u8()
            lastRiskScore = score == 0xFF ? nil : score
        } else {
            lastRiskScore = nil
        }
        if r.version >= 4 {
            let metric = try r.u32(), at = try r.i64()
            appleRiskMetric = metric == UInt32.max ? nil : metric
            appleRiskMetricAt = at == 0 ? nil : Timestamp(seconds: at)
            let c = try r.u8()
            guard let check = ReceiptRecord.Check(rawValue: c) else { throw StoreError(.corrupt, "receipt check \(c)") }
            receiptCheck = check
        }
    }
}
