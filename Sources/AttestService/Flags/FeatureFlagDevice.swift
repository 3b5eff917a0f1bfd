import AttestCore
import AttestStore

/// Who asks for flags: a device the server verified (a token), or an API-key caller, which has
/// no device (`X-Device-ID`, client-claimed, is then its rollout identity and `sdk:` subject).
public enum FeatureFlagCaller: Sendable {
    case device(FeatureFlagDevice)
    case apiKey(sdkDeviceID: String?)
}

/// The server's view of one device, for the server attributes of flag conditions: its
/// profile and risk (as the claims language sees them), its anchor, and the identity of its
/// rollout buckets. Nothing here comes from a request header.
public struct FeatureFlagDevice: Sendable {
    public let deviceID: String
    /// `LineageKey.digest`: the rollout identity, the same for every key of a fingerprint.
    public let lineageDigest: [UInt8]
    public let profile: DeviceProfile
    public let risk: RiskAssessment
    public let anchor: DeviceRecord.Anchor

    public init(deviceID: String, lineageDigest: [UInt8], profile: DeviceProfile, risk: RiskAssessment,
                anchor: DeviceRecord.Anchor = .apple) {
        self.deviceID = deviceID
        self.lineageDigest = lineageDigest
        self.profile = profile
        self.risk = risk
        self.anchor = anchor
    }

    /// Reads the device's lineage and subject in `txn` (two gets) and assesses it.
    public static func read(_ device: DeviceRecord, lineage: LineageRecord? = nil, app: AppRecord, org: OrgRecord,
                            now: Timestamp, in txn: Transaction, _ ctx: ServiceContext) throws -> FeatureFlagDevice {
        try read(device, lineage: lineage, app: app, org: org, now: now, in: txn)
    }

    /// As above, without a service context (attestctl); `lineage` when the caller has read it.
    public static func read(_ device: DeviceRecord, lineage read: LineageRecord? = nil, app: AppRecord,
                            org: OrgRecord, now: Timestamp, in txn: Transaction) throws -> FeatureFlagDevice {
        let lineage = try read ?? txn.lineage(of: device)
        let subject = device.subjectID.isEmpty ? nil : try txn.subject(org: org.name, subjectID: device.subjectID)
        let profile = DeviceProfile(device: device, lineage: lineage, subject: subject, now: now)
        return FeatureFlagDevice(deviceID: device.deviceID, lineageDigest: LineageKey.of(device).digest,
                                 profile: profile, risk: RiskAssessment(profile, app: app), anchor: device.anchor)
    }

    /// The device's value of a server attribute; nil for a client-claimed one (never read here).
    func value(_ attribute: FeatureFlagAttribute) -> JSONValue? {
        switch attribute {
        case .device(let p): return p.value(of: profile, risk: risk)
        case .attest: return .string(anchor == .apple ? "hardware" : "test_root")
        case .jailbroken: return .bool(profile.flags.contains(.jailbreak))
        case .entitlement: return .array(profile.entitlements.map { .string($0) })
        case .riskScore: return .int(Int64(risk.score))
        case .attestationStatus: return .string("attested")
        case .claimed, .custom: return nil
        }
    }
}

extension FeatureFlagCaller {
    /// The caller's value of `attribute`: server attributes from the device alone, client-claimed
    /// ones from the headers alone.
    func value(_ attribute: FeatureFlagAttribute, _ targeting: FeatureFlagTargeting) -> JSONValue? {
        switch attribute {
        case .claimed(let h): return targeting.value(h).map { .string($0) }
        case .custom(let key): return targeting.custom(key).map { .string($0) }
        default:
            switch self {
            case .device(let d): return d.value(attribute)
            case .apiKey: return attribute == .attestationStatus ? .string("unattested") : nil
            }
        }
    }

    /// The caller's value of `condition`'s attribute; a header's name was made once, at compile.
    func value(_ condition: CompiledCondition, _ targeting: FeatureFlagTargeting) -> JSONValue? {
        guard let param = condition.headerParam else { return value(condition.attribute, targeting) }
        return targeting.value(param: param).map { .string($0) }
    }

    /// The rollout identity: the lineage digest, or an API-key caller's `X-Device-ID`.
    func identity(_ targeting: FeatureFlagTargeting) -> [UInt8]? {
        switch self {
        case .device(let d): return d.lineageDigest
        case .apiKey(let sdk): return (sdk ?? targeting.sdkDeviceID).map { Array($0.utf8) }
        }
    }

    var deviceID: String? {
        if case .device(let d) = self { return d.deviceID }
        return nil
    }
}
