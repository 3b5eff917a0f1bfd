import AttestCore
import AttestStore

/// The org API's device shapes (`OrgDevicesEndpoint`).
///
/// ```
/// summary = {"key_id" (base64url, no padding), "app_id", "environment" ("production"|"development"),
///            "device_id", "fingerprint" (its first 12 characters, "" when none), "status", "flags":
///            ["jailbroken"?, "blocked"?], "risk_score" (the last token's, or null: none yet, or the
///            free tier), "risk_category" (of that score, or null), "created_at", "last_seen_at"}
/// status  = "revoked" | "invalidated" (the record's status) | "blocked" | "flagged" (jailbroken)
///           | "active", the first that holds in that order
/// detail  = summary + {"fingerprint_full", "subject_id", "counter", "failed_assertions",
///            "metadata": {"device_model", "os_version", "app_version", "app_build_number", "platform"},
///            "standing": {"refused", "why"} (OrgDeviceStanding),
///            "risk": {"score" (null on the free tier), "category", "factors": [{"signal", "points", "detail"}]},
///            "attestations": [{"key_id", "attested_at" (null when unknown)}] (the fingerprint's, oldest first),
///            "flag_changes": [{"at", "previous", "flags", "key_id", "device_id", "reason"}] (oldest first),
///            "subject"?: {"subject_id", "entitlements", "expires_at"} (a linked device only)}
/// ```
/// `previous` and `flags` of a flag change are comma-joined names (`jailbroken,blocked`, or `none`).
public enum OrgDeviceWire {
    /// A key id as the org API, the console and the audit log show it (base64url, no padding).
    public static func keyID(_ bytes: [UInt8]) -> String { Base64.encode(bytes, url: true) }

    static func status(_ d: DeviceRecord) -> String {
        switch d.status {
        case .revoked, .invalidated: return d.status.name
        case .active:
            if d.operatorFlags.contains(.blocked) { return "blocked" }
            if d.operatorFlags.contains(.jailbreak) { return "flagged" }
            return "active"
        }
    }

    static func flags(_ f: DeviceRecord.OperatorFlags) -> JSONValue {
        .array((f.contains(.jailbreak) ? [JSONValue.string("jailbroken")] : [])
               + (f.contains(.blocked) ? [.string("blocked")] : []))
    }

    static func summary(_ d: DeviceRecord, tier: Tier) -> [(String, JSONValue)] {
        let score = tier == .free ? nil : d.lastRiskScore.map { Int($0) }
        return [
            ("key_id", .string(keyID(d.keyID))), ("app_id", .string(d.appID)),
            ("environment", .string(d.environment.rawValue)), ("device_id", .string(d.deviceID)),
            ("fingerprint", .string(String(d.fingerprint.prefix(12)))), ("status", .string(status(d))),
            ("flags", flags(d.operatorFlags)),
            ("risk_score", score.map { .int(Int64($0)) } ?? .null),
            ("risk_category", score.map { .string(RiskAssessment.category($0)) } ?? .null),
            ("created_at", .string(d.createdAt.iso8601)), ("last_seen_at", .string(d.lastSeenAt.iso8601)),
        ]
    }

    static func detail(_ d: DeviceRecord, tier: Tier, standing: OrgDeviceStanding, assessment: DeviceAssessment,
                       changes: [FlagChange], now: Timestamp) -> JSONValue {
        var members = summary(d, tier: tier)
        let m = d.metadata
        members += [
            ("fingerprint_full", .string(d.fingerprint)), ("subject_id", .string(d.subjectID)),
            ("counter", .int(Int64(d.counter))), ("failed_assertions", .int(Int64(d.failedAssertions))),
            ("metadata", .object([("device_model", .string(m.deviceModel)), ("os_version", .string(m.osVersion)),
                                  ("app_version", .string(m.appVersion)),
                                  ("app_build_number", .string(m.appBuildNumber)),
                                  ("platform", .string(m.platform))])),
            ("standing", .object([("refused", .bool(standing.refused)), ("why", .string(standing.why))])),
            ("risk", .object([("score", tier == .free ? .null : .int(Int64(assessment.risk.score))),
                              ("category", .string(assessment.risk.category)),
                              ("factors", assessment.risk.factorsJSON)])),
            ("attestations", .array(assessment.lineage.history.map {
                .object([("key_id", .string(keyID($0.keyID))),
                         ("attested_at", $0.attestedAt.seconds > 0 ? .string($0.attestedAt.iso8601) : .null)])
            })),
            ("flag_changes", .array(changes.map {
                .object([("at", .string($0.at.iso8601)), ("previous", .string($0.previous.names)),
                         ("flags", .string($0.flags.names)), ("key_id", .string(keyID($0.keyID))),
                         ("device_id", .string($0.deviceID)), ("reason", .string($0.reason))])
            })),
        ]
        if let subject = assessment.subscription(subjectID: d.subjectID, now: now) {
            members.append(("subject", subject))
        }
        return .object(members)
    }
}
