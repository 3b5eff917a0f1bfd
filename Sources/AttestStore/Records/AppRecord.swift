import AttestCore

/// An app, identified by its App ID `TEAMID.bundleId`.
///
/// Key: the App ID's UTF-8. Layout v2 (v1 is the same without the last two fields, read as
/// threshold 0, off, and the default points):
/// ```
/// u8 2 | teamID string | bundleID string | org string | policy u8 (0 production, 1 development, 2 both)
///      | enabled u8 | tokenLifetime u32 (seconds; 0 = deployment default)
///      | customClaims string (JSON array, see docs/contract.md §6) | minAppVersion string | minOSVersion string
///      | createdAt i64 | appleRiskMetricThreshold u32 (0 = off) | appleRiskMetricPoints u8 (0…100)
/// ```
public struct AppRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 2
    public static let recordName = "app"

    public var teamID: String
    public var bundleID: String
    public var org: String
    public var policy: EnvironmentPolicy
    public var enabled: Bool
    public var tokenLifetimeSeconds: UInt32
    /// The app's custom claims as JSON text (an ordered array); empty = none.
    public var customClaimsJSON: String
    public var minAppVersion: String
    public var minOSVersion: String
    public var createdAt: Timestamp
    /// The risk signal `apple_risk_metric` adds `appleRiskMetricPoints` when Apple's risk
    /// metric for the device is above this; 0: the signal is off (the default: Apple says to
    /// tune thresholds to the values an app observes).
    public var appleRiskMetricThreshold: UInt32 = 0
    public var appleRiskMetricPoints: UInt8 = AppRecord.defaultAppleRiskMetricPoints

    /// The points of `apple_risk_metric` unless set: as much as an outdated app version.
    public static let defaultAppleRiskMetricPoints: UInt8 = 25

    public var appID: String { AppRecord.appID(teamID: teamID, bundleID: bundleID) }

    public static func appID(teamID: String, bundleID: String) -> String { teamID + "." + bundleID }

    public init(teamID: String, bundleID: String, org: String, policy: EnvironmentPolicy = .production,
                enabled: Bool = true, tokenLifetimeSeconds: UInt32 = 0, customClaimsJSON: String = "",
                minAppVersion: String = "", minOSVersion: String = "", createdAt: Timestamp) {
        self.teamID = teamID
        self.bundleID = bundleID
        self.org = org
        self.policy = policy
        self.enabled = enabled
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.customClaimsJSON = customClaimsJSON
        self.minAppVersion = minAppVersion
        self.minOSVersion = minOSVersion
        self.createdAt = createdAt
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(teamID)
        w.string(bundleID)
        w.string(org)
        w.u8(policy.storeCode)
        w.bool(enabled)
        w.u32(tokenLifetimeSeconds)
        w.string(customClaimsJSON)
        w.string(minAppVersion)
        w.string(minOSVersion)
        w.i64(createdAt.seconds)
        w.u32(appleRiskMetricThreshold)
        w.u8(appleRiskMetricPoints)
    }

    public init(from r: inout BinaryReader) throws {
        teamID = try r.string()
        bundleID = try r.string()
        org = try r.string()
        policy = try EnvironmentPolicy(storeCode: r.u8())
        enabled = try r.bool()
        tokenLifetimeSeconds = try r.u32()
        customClaimsJSON = try r.string()
        minAppVersion = try r.string()
        minOSVersion = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        if r.version >= 2 {
            appleRiskMetricThreshold = try r.u32()
            appleRiskMetricPoints = try r.u8()
            guard appleRiskMetricPoints <= 100 else {
                throw StoreError(.corrupt, "apple risk metric points \(appleRiskMetricPoints)")
            }
        }
    }
}

extension EnvironmentPolicy {
    var storeCode: UInt8 {
        switch self {
        case .production: return 0
        case .development: return 1
        case .both: return 2
        }
    }

    init(storeCode: UInt8) throws {
        switch storeCode {
        case 0: self = .production
        case 1: self = .development
        case 2: self = .both
        default: throw StoreError(.corrupt, "environment policy \(storeCode)")
        }
    }
}
