import AttestStore

/// The risk score: a documented, deterministic sum of signals the server can observe.
///
/// | signal | points |
/// |---|---|
/// | development-environment key | +10 |
/// | key churn: each extra App Attest key seen with the same deviceFingerprint | +15 each, at most +45 |
/// | failed assertions recorded for the key | +10 each, at most +30 |
/// | app version below the app's minimum | +25 |
/// | OS version below the app's minimum | +25 |
/// | operator flag `jailbreak` | score at least 80 |
/// | operator flag `blocked` | 100 |
///
/// Clamped to 0…100. Categories (SPEC §5): `trusted` 0–20, `suspicious` 21–75, `blocked` 76–100.
/// App Attest cannot see a jailbreak; `jailbreakDetected` is true only when an operator flags it.
public struct RiskAssessment: Sendable, Equatable {
    public let score: Int
    public let category: String
    public let deviceIntegrity: String
    public let jailbreakDetected: Bool

    public init(device: DeviceRecord, app: AppRecord, fingerprintKeys: UInt32) {
        var score = 0
        if device.environment == .development { score += 10 }
        if fingerprintKeys > 1 { score += min(45, 15 * Int(fingerprintKeys - 1)) }
        score += min(30, 10 * Int(device.failedAssertions))
        if !app.minAppVersion.isEmpty, !device.metadata.appVersion.isEmpty,
           VersionNumber.compare(device.metadata.appVersion, app.minAppVersion) < 0 { score += 25 }
        if !app.minOSVersion.isEmpty, !device.metadata.osVersion.isEmpty,
           VersionNumber.compare(device.metadata.osVersion, app.minOSVersion) < 0 { score += 25 }
        if device.operatorFlags.contains(.jailbreak) { score = max(score, 80) }
        if device.operatorFlags.contains(.blocked) { score = 100 }
        score = max(0, min(100, score))
        self.score = score
        category = RiskAssessment.category(score)
        jailbreakDetected = device.operatorFlags.contains(.jailbreak)
        deviceIntegrity = device.operatorFlags.isEmpty ? "valid" : "flagged"
    }

    public static func category(_ score: Int) -> String {
        score <= 20 ? "trusted" : score <= 75 ? "suspicious" : "blocked"
    }
}

/// Dotted version numbers ("17.4.1") compared numerically, missing parts as 0.
enum VersionNumber {
    static func compare(_ a: String, _ b: String) -> Int {
        let x = a.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
        let y = b.split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
        for i in 0..<max(x.count, y.count) {
            let l = i < x.count ? x[i] : 0, r = i < y.count ? y[i] : 0
            if l != r { return l < r ? -1 : 1 }
        }
        return 0
    }
}
