import AttestConfig
import AttestCore
import AttestStore

/// A device token as issued (`TokenIssuer`): the signed JWT, its expiry, and the risk and
/// custom claims it carries.
struct IssuedToken {
    let token: String
    let expiresAt: Timestamp
    let risk: RiskAssessment
    let customClaims: [(String, JSONValue)]
}

/// Builds and signs a device token (docs/contract.md §5) with the signing key active now (`SigningKeys`).
///
/// ```
/// {"iss", "aud": "TEAMID.bundleId" | bundleId (`tokens.audience`), "sub": deviceId, "device_id", "iat", "exp", "jti",
///  "team_id", "bundle_id", "environment", "risk_score" (null on free), "risk_category", "device_integrity",
///  "jailbreak_detected", "attestation_count", "attest": "hardware" | "test_root", "device_model", "os_version",
///  "app_version", "platform", "apple_risk_metric" (integer or null), "apple_risk_metric_at" (ISO 8601 or null),
///  "custom_claims": {…},
///  "subscription": {"subject_id", "entitlements": [...], "expires_at"}   (only for a device linked to a subject)}
/// ```
/// `attestation_count` is the number of keys attested for the device's fingerprint;
/// `risk_*`, `custom_claims` and `subscription` are computed at issue (`DeviceAssessment`);
/// `apple_risk_metric(_at)` are Apple's metric from the key's last redeemed receipt and that
/// receipt's creation time, copied on the device (`AppleRiskMetric.record`), null until then.
enum TokenIssuer {
    static func issue(device: DeviceRecord, app: AppContext, assessment a: DeviceAssessment, now: Timestamp,
                      _ ctx: ServiceContext) throws -> IssuedToken {
        let risk = a.risk
        let lifetime = app.app.tokenLifetimeSeconds > 0
            ? Int64(app.app.tokenLifetimeSeconds) : Int64(ctx.configuration.tokenLifetimeSeconds)
        let expiresAt = now + lifetime
        let showScore = app.org.tier != .free
        var claims: [(String, JSONValue)] = [
            ("iss", .string(ctx.configuration.tokenIssuer)),
            ("aud", .string(ctx.configuration.audience(of: app.app))),
            ("sub", .string(device.deviceID)),
            ("device_id", .string(device.deviceID)),
            ("iat", .int(now.seconds)),
            ("exp", .int(expiresAt.seconds)),
            ("jti", .string(Hex.encode(ctx.random.bytes(16)))),
            ("team_id", .string(app.app.teamID)),
            ("bundle_id", .string(app.app.bundleID)),
            ("environment", .string(device.environment.rawValue)),
            ("risk_score", showScore ? .int(Int64(risk.score)) : .null),
            ("risk_category", .string(risk.category)),
            ("device_integrity", .string(risk.deviceIntegrity)),
            ("jailbreak_detected", .bool(risk.jailbreakDetected)),
            ("attestation_count", .int(Int64(a.profile.attestationCount))),
            ("attest", .string(device.anchor == .apple ? "hardware" : "test_root")),
            ("device_model", .string(device.metadata.deviceModel)),
            ("os_version", .string(device.metadata.osVersion)),
            ("app_version", .string(device.metadata.appVersion)),
            ("platform", .string(device.metadata.platform)),
            ("apple_risk_metric", device.appleRiskMetric.map { .int(Int64($0)) } ?? .null),
            ("apple_risk_metric_at", device.appleRiskMetricAt.map { .string($0.iso8601) } ?? .null),
            ("custom_claims", .object(a.claims)),
        ]
        if let subscription = a.subscription(subjectID: device.subjectID, now: now) {
            claims.append(("subscription", subscription))
        }
        let token = try SigningKeys.signer(ctx).sign(.object(claims))
        return IssuedToken(token: token, expiresAt: expiresAt, risk: risk, customClaims: a.claims)
    }
}

extension Configuration {
    /// A token's `aud` for `app`: its App ID (`TEAMID.bundleId`), or with `tokens.audience`
    /// `bundle` its bundle ID alone (then a team's `aud` is another team's with the same
    /// bundle ID: only `team_id` tells them apart).
    func audience(of app: AppRecord) -> String {
        tokenAudience == .bundle ? app.bundleID : app.appID
    }
}

/// A device's public identifier: the first 16 bytes of SHA-256("attestedge-device:" ‖ keyId), hex.
public enum DeviceIdentity {
    public static func deviceID(keyID: [UInt8]) -> String {
        Hex.encode(SHA256.hash(Array("attestedge-device:".utf8) + keyID).prefix(16))
    }
}
