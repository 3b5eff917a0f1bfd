import AttestStore

/// The risk score: a documented, deterministic sum of signals the server can observe
/// (docs/tokens.md, "Risk score"; the table is pinned by `RiskModelTests`).
///
/// | signal | points |
/// |---|---|
/// | `development_key`: a development-environment key | +10 |
/// | `key_churn`: each key beyond the first attested for the device's fingerprint | +15 each, at most +45 |
/// | `attestation_burst`: 3 or more keys attested for the fingerprint within an hour | +20 |
/// | `failed_assertions`: assertions signed by the key but refused (replayed counter, another app), last 24 h | +10 each, at most +30 |
/// | `forged_assertions`: assertions not signed by the key, last 24 h | +5 each, at most +20 |
/// | `app_version_below_minimum` | +25 |
/// | `os_version_below_minimum` | +25 |
/// | `receipt_invalid`: the attestation's receipt failed its check at validate (`ReceiptCheck`) | +10 |
/// | `apple_risk_metric`: Apple's risk metric above the app's threshold (0: off, the default) | the app's points (25) |
/// | `operator_jailbroken`: operator flag | the score becomes at least 80 |
/// | `operator_blocked`: operator flag | the score becomes 100 |
///
/// Clamped to 0…100. Categories (docs/contract.md §5): `trusted` 0–20, `suspicious` 21–75, `blocked` 76–100.
/// Forged assertions can come from anyone who knows a keyId, so alone they keep a device
/// `trusted`. App Attest cannot see a jailbreak: `jailbreakDetected` is true only when an
/// operator flags the device.
public struct RiskAssessment: Sendable, Equatable {
    /// One signal that added points.
    public struct Factor: Sendable, Equatable {
        public let signal: String
        public let detail: String
        public let points: Int
    }

    public let score: Int
    public let category: String
    public let deviceIntegrity: String
    public let jailbreakDetected: Bool
    public let factors: [Factor]

    /// The window of `attestation_burst`.
    public static let burstWindow: Int64 = 3_600
    public static let burstKeys = 3

    public init(_ p: DeviceProfile, app: AppRecord) {
        var factors = [Factor]()
        func add(_ signal: String, _ detail: String, _ points: Int) {
            if points > 0 { factors.append(Factor(signal: signal, detail: detail, points: points)) }
        }
        if let given = p.givenRiskScore {
            add("given", "riskScore given by the profile", given)
        } else {
            if p.environment == .development { add("development_key", "development-environment App Attest key", 10) }
            if p.attestationCount > 1 {
                add("key_churn", "\(p.attestationCount) keys attested for this fingerprint",
                    min(45, 15 * (p.attestationCount - 1)))
            }
            if p.recentAttestations >= Self.burstKeys {
                add("attestation_burst", "\(p.recentAttestations) keys within an hour", 20)
            }
            add("failed_assertions", "\(p.failedAssertions) in the last 24 h", min(30, 10 * p.failedAssertions))
            add("forged_assertions", "\(p.forgedAssertions) in the last 24 h", min(20, 5 * p.forgedAssertions))
            // A reported version that is not one counts as below a minimum that is one.
            if !app.minAppVersion.isEmpty, !p.metadata.appVersion.isEmpty,
               Versions.compare(p.metadata.appVersion, app.minAppVersion).map({ $0 < 0 })
                   ?? Versions.isVersion(app.minAppVersion) {
                add("app_version_below_minimum", "app \(p.metadata.appVersion) < \(app.minAppVersion)", 25)
            }
            if !app.minOSVersion.isEmpty, !p.metadata.osVersion.isEmpty,
               Versions.compare(p.metadata.osVersion, app.minOSVersion).map({ $0 < 0 })
                   ?? Versions.isVersion(app.minOSVersion) {
                add("os_version_below_minimum", "OS \(p.metadata.osVersion) < \(app.minOSVersion)", 25)
            }
            if p.receiptInvalid { add("receipt_invalid", "the attestation's receipt failed its check", 10) }
            if app.appleRiskMetricThreshold > 0, let metric = p.appleRiskMetric,
               metric > Int(app.appleRiskMetricThreshold) {
                add("apple_risk_metric", "Apple's risk metric \(metric) > \(app.appleRiskMetricThreshold)",
                    Int(app.appleRiskMetricPoints))
            }
        }
        var score = min(100, factors.reduce(0) { $0 + $1.points })
        if p.flags.contains(.jailbreak) && score < 80 {
            add("operator_jailbroken", "flagged jailbroken by an operator: at least 80", 80 - score)
            score = 80
        }
        if p.flags.contains(.blocked) && score < 100 {
            add("operator_blocked", "blocked by an operator: 100", 100 - score)
            score = 100
        }
        self.score = score
        self.factors = factors
        category = RiskAssessment.category(score)
        jailbreakDetected = p.flags.contains(.jailbreak)
        deviceIntegrity = p.flags.isEmpty ? "valid" : "flagged"
    }

    public static func category(_ score: Int) -> String {
        score <= 20 ? "trusted" : score <= 75 ? "suspicious" : "blocked"
    }
}
