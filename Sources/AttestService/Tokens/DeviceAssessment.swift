import AttestCore
import AttestStore

/// What a token says about a device beyond its record, read in the transaction that issues
/// it: its lineage (keys, flags, recent failures), its subject, the profile built from them,
/// the risk and the custom claims. `attestctl device show` and `claims test` use the same.
public struct DeviceAssessment: Sendable {
    public let lineage: LineageRecord
    public let subject: SubjectRecord?
    public let profile: DeviceProfile
    public let risk: RiskAssessment
    public let claims: [(String, JSONValue)]
    public let steps: [CustomClaims.Step]

    /// - Parameter org: the app's organization (subjects are scoped to it).
    /// `explain`: keep why each rule applied or not (`steps`; the CLI's), else `steps` is empty.
    public init(device: DeviceRecord, app: AppRecord, rules: [ClaimRule], org: String, in txn: Transaction,
                now: Timestamp, explain: Bool = false) throws {
        let lineage = try txn.lineage(of: device)
        let subject = device.subjectID.isEmpty ? nil : try txn.subject(org: org, subjectID: device.subjectID)
        self.init(profile: DeviceProfile(device: device, lineage: lineage, subject: subject, now: now), app: app,
                  rules: rules, lineage: lineage, subject: subject, explain: explain)
    }

    /// For a described profile (no stored device).
    public init(profile: DeviceProfile, app: AppRecord, rules: [ClaimRule], lineage: LineageRecord = LineageRecord(),
                subject: SubjectRecord? = nil, explain: Bool = false) {
        self.lineage = lineage
        self.subject = subject
        self.profile = profile
        risk = RiskAssessment(profile, app: app)
        (claims, steps) = CustomClaims.evaluate(rules, profile: profile, risk: risk, explain: explain)
    }

    /// The token's `subscription` for a device linked to `subjectID`:
    /// `{"subject_id", "entitlements": [names in force, in grant order], "expires_at"}` where
    /// `expires_at` is the earliest end among them (when the list next changes by itself), or
    /// null when none ends.
    public func subscription(subjectID: String, now: Timestamp) -> JSONValue? {
        guard !subjectID.isEmpty else { return nil }
        let active = subject?.active(at: now) ?? []
        let ends = active.compactMap(\.until).min()
        return .object([("subject_id", .string(subjectID)), ("entitlements", .array(active.map { .string($0.name) })),
                        ("expires_at", ends.map { .string($0.iso8601) } ?? .null)])
    }
}
