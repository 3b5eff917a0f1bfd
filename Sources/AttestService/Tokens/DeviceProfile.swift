import AttestCore
import AttestStore

/// One device as the server sees it at a moment: what the risk model and the claim
/// conditions read. Built from the stored device, its lineage and its subject at every
/// validate and refresh, or from a described profile (`attestctl claims test --profile`).
public struct DeviceProfile: Sendable, Equatable {
    public var environment: AppAttestEnvironment = .production
    public var metadata = DeviceRecord.Metadata()
    /// Keys ever attested for the device's fingerprint (1 without a fingerprint).
    public var attestationCount = 1
    /// Keys attested for the fingerprint within `RiskAssessment.burstWindow`.
    public var recentAttestations = 1
    /// Assertion failures of the last 24 hours (see `LineageRecord.FailureKind`).
    public var failedAssertions = 0
    public var forgedAssertions = 0
    public var flags: DeviceRecord.OperatorFlags = []
    /// The subject's entitlements in force (empty without a subject).
    public var entitlements: [String] = []
    /// Set by a described profile to skip the model (`"riskScore": N`).
    public var givenRiskScore: Int?
    /// Apple's risk metric from the key's last redeemed receipt; nil until one was redeemed.
    public var appleRiskMetric: Int?
    /// Whether the key's receipt failed its check at validate (`receipt_invalid`).
    public var receiptInvalid = false

    public var subscribed: Bool { !entitlements.isEmpty }

    public init() {}

    public init(device: DeviceRecord, lineage: LineageRecord, subject: SubjectRecord?, now: Timestamp) {
        environment = device.environment
        metadata = device.metadata
        attestationCount = Int(max(1, lineage.keys))
        recentAttestations = lineage.attestations(within: RiskAssessment.burstWindow, now: now)
        failedAssertions = lineage.failures(.failed, now: now)
        forgedAssertions = lineage.failures(.forged, now: now)
        flags = lineage.flags
        entitlements = subject?.active(at: now).map(\.name) ?? []
        appleRiskMetric = device.appleRiskMetric.map(Int.init)
        receiptInvalid = device.receiptCheck == .invalid
    }

    /// A described profile: members named like the properties (`environment`, `platform`,
    /// `deviceModel`, `osVersion`, `appVersion`, `attestationCount`, `subscribed`, `riskScore`)
    /// plus the model's other inputs (`recentAttestations`, `failedAssertions`,
    /// `forgedAssertions`, `jailbroken`, `blocked`, `entitlements`, `appleRiskMetric`,
    /// `receiptInvalid`). Absent members take the
    /// values of a fresh production device.
    /// - Throws: `bad_request` for an unknown member or a value of the wrong type.
    public init(profileJSON text: String) throws(ServiceError) {
        guard let members = (try? JSONParser.parse(text))?.objectValue else {
            throw ServiceError(.badRequest,
                               "--profile must be a JSON object, e.g. '{\"appVersion\":\"2.0\",\"subscribed\":true}'")
        }
        func fail(_ name: String, _ what: String) -> ServiceError {
            ServiceError(.badRequest, "--profile: \(name) must be \(what)")
        }
        for (name, value) in members {
            switch name {
            case "environment":
                guard let e = value.stringValue.flatMap(AppAttestEnvironment.init(rawValue:)) else {
                    throw fail(name, "production or development")
                }
                environment = e
            case "platform", "deviceModel", "osVersion", "appVersion":
                guard let s = value.stringValue else { throw fail(name, "text") }
                switch name {
                case "platform": metadata.platform = s
                case "deviceModel": metadata.deviceModel = s
                case "osVersion": metadata.osVersion = s
                default: metadata.appVersion = s
                }
            case "attestationCount", "recentAttestations", "failedAssertions", "forgedAssertions":
                guard let n = value.intValue, n >= 0, n <= 1_000_000 else { throw fail(name, "a whole number ≥ 0") }
                switch name {
                case "attestationCount": attestationCount = Int(n)
                case "recentAttestations": recentAttestations = Int(n)
                case "failedAssertions": failedAssertions = Int(n)
                default: forgedAssertions = Int(n)
                }
            case "appleRiskMetric":
                guard let n = value.intValue, n >= 0, n <= 1_000_000 else { throw fail(name, "a whole number ≥ 0") }
                appleRiskMetric = Int(n)
            case "receiptInvalid":
                guard let b = value.boolValue else { throw fail(name, "true or false") }
                receiptInvalid = b
            case "riskScore":
                guard let n = value.intValue, (0...100).contains(n) else { throw fail(name, "a whole number 0–100") }
                givenRiskScore = Int(n)
            case "jailbroken", "blocked":
                guard let b = value.boolValue else { throw fail(name, "true or false") }
                let flag: DeviceRecord.OperatorFlags = name == "blocked" ? .blocked : .jailbreak
                if b { flags.insert(flag) } else { flags.remove(flag) }
            case "subscribed":
                guard let b = value.boolValue else { throw fail(name, "true or false") }
                entitlements = b ? (entitlements.isEmpty ? ["(any)"] : entitlements) : []
            case "entitlements":
                guard let items = value.arrayValue?.compactMap(\.stringValue),
                      items.count == value.arrayValue?.count else {
                    throw fail(name, "an array of names")
                }
                entitlements = items
            default:
                throw ServiceError(.badRequest, "--profile: unknown member \(name)")
            }
        }
        if recentAttestations > attestationCount { attestationCount = recentAttestations }
    }
}

/// The device properties a claim condition can test.
public enum DeviceProperty: String, Sendable, CaseIterable {
    case riskScore, riskCategory, environment, appVersion, osVersion, platform, deviceModel, attestationCount,
         subscribed, appleRiskMetric

    public enum Kind: Sendable {
        case number, version, text, bool

        func accepts(_ v: JSONValue) -> Bool {
            switch self {
            case .number: return v.doubleValue != nil
            case .version: return v.stringValue != nil || v.doubleValue != nil
            case .text: return v.stringValue != nil
            case .bool: return v.boolValue != nil
            }
        }

        var expected: String {
            switch self {
            case .number: return "a number"
            case .version: return "a version (text such as \"2.1.0\")"
            case .text: return "text"
            case .bool: return "true or false"
            }
        }
    }

    public var kind: Kind {
        switch self {
        case .riskScore, .attestationCount, .appleRiskMetric: return .number
        case .appVersion, .osVersion: return .version
        case .riskCategory, .environment, .platform, .deviceModel: return .text
        case .subscribed: return .bool
        }
    }

    /// The device's value; `nil` when it did not report it.
    func value(of profile: DeviceProfile, risk: RiskAssessment) -> JSONValue? {
        func text(_ s: String) -> JSONValue? { s.isEmpty ? nil : .string(s) }
        switch self {
        case .riskScore: return .int(Int64(risk.score))
        case .riskCategory: return .string(risk.category)
        case .environment: return .string(profile.environment.rawValue)
        case .appVersion: return text(profile.metadata.appVersion)
        case .osVersion: return text(profile.metadata.osVersion)
        case .platform: return text(profile.metadata.platform)
        case .deviceModel: return text(profile.metadata.deviceModel)
        case .attestationCount: return .int(Int64(profile.attestationCount))
        case .subscribed: return .bool(profile.subscribed)
        case .appleRiskMetric: return profile.appleRiskMetric.map { .int(Int64($0)) }
        }
    }
}

extension ClaimCondition {
    /// Whether the condition holds for a device whose property value is `actual`.
    func holds(_ actual: JSONValue?) -> Bool {
        guard let actual else { return op == .ne }
        func compare(_ operand: JSONValue) -> Int? {
            switch property.kind {
            case .number:
                guard let a = actual.doubleValue, let b = operand.doubleValue else { return nil }
                return a < b ? -1 : a > b ? 1 : 0
            case .version:
                guard let a = actual.stringValue,
                      let b = operand.stringValue ?? (operand.doubleValue != nil ? operand.jsonText : nil) else {
                    return nil
                }
                return Versions.compare(a, b)
            case .text, .bool:
                return actual == operand ? 0 : 1
            }
        }
        switch op {
        case .in: return operand.arrayValue?.contains { compare($0) == 0 } ?? false
        case .eq: return compare(operand) == 0
        case .ne: return compare(operand).map { $0 != 0 } ?? true
        case .lt: return compare(operand).map { $0 < 0 } ?? false
        case .le: return compare(operand).map { $0 <= 0 } ?? false
        case .gt: return compare(operand).map { $0 > 0 } ?? false
        case .ge: return compare(operand).map { $0 >= 0 } ?? false
        }
    }
}
