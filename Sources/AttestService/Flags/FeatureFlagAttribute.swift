/// What a feature-flag condition tests (docs/flags.md, "Attributes"). Two kinds, never mixed:
///
/// - **server** attributes are what the server knows about a device it has verified: the claims
///   language's properties (`riskScore`, `riskCategory`, `environment`, `appVersion`, …, read
///   from the device record, its lineage, risk and subject) and `attest`, `jailbroken`,
///   `entitlement`, `risk_score`, `attestation_status`. **No request header is ever read for
///   them.** An API-key caller has no device, so each is missing (except `attestation_status`,
///   which is `unattested`).
/// - **client-claimed** attributes come from the SDK's targeting headers (`app_version` ←
///   `X-App-Version`, `custom.plan` ← `X-Custom-plan`, …): whatever the client sent.
public enum FeatureFlagAttribute: Hashable, Sendable {
    /// A claims-language property, with the server's value.
    case device(DeviceProperty)
    /// `attest`: `hardware` (Apple's App Attest root) or `test_root` (the test CA).
    case attest
    /// `jailbroken`: an operator flagged the device's lineage jailbroken.
    case jailbroken
    /// `entitlement`: the subject's entitlements in force (a list: `in`, `not_in`, `contains`).
    case entitlement
    /// `risk_score`: the hosted name of the server's risk score.
    case riskScore
    /// `attestation_status`: `attested` (a token's device) or `unattested` (an API key).
    case attestationStatus
    /// A targeting header.
    case claimed(FeatureFlagHeader)
    /// `custom.<key>`: the header `X-Custom-<key>`; `key` is kept as written (matched
    /// case-insensitively, `-` and `_` alike, as FastCGI param names lose both).
    case custom(String)

    /// What values the attribute takes; decides the operators and operands it allows.
    public enum Kind: Sendable, Equatable {
        case number, version, text, bool, list
        /// Client-claimed text of no declared type: ordering compares numbers when both sides
        /// are numbers, else versions when both are versions.
        case claimedText
    }

    public static let customPrefix = "custom."
    /// Longest `custom.` key (a header name's part after `X-Custom-`).
    public static let customKeyBytes = 64

    /// The attribute named `name`, or nil.
    public init?(name: String) {
        if let p = DeviceProperty(rawValue: name) {
            self = .device(p)
        } else if let h = FeatureFlagHeader(rawValue: name) {
            self = .claimed(h)
        } else if name.hasPrefix(Self.customPrefix) {
            let key = name.dropFirst(Self.customPrefix.count)
            guard !key.isEmpty, key.utf8.count <= Self.customKeyBytes,
                  key.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A)
                      || $0 == 0x2D || $0 == 0x5F }) else { return nil }
            self = .custom(String(key))
        } else {
            switch name {
            case "attest": self = .attest
            case "jailbroken": self = .jailbroken
            case "entitlement": self = .entitlement
            case "risk_score": self = .riskScore
            case "attestation_status": self = .attestationStatus
            default: return nil
            }
        }
    }

    public var name: String {
        switch self {
        case .device(let p): return p.rawValue
        case .attest: return "attest"
        case .jailbroken: return "jailbroken"
        case .entitlement: return "entitlement"
        case .riskScore: return "risk_score"
        case .attestationStatus: return "attestation_status"
        case .claimed(let h): return h.rawValue
        case .custom(let key): return Self.customPrefix + key
        }
    }

    /// Whether the client's headers supply the value.
    public var isClaimed: Bool {
        switch self {
        case .claimed, .custom: return true
        default: return false
        }
    }

    public var kind: Kind {
        switch self {
        case .device(let p):
            switch p.kind {
            case .number: return .number
            case .version: return .version
            case .text: return .text
            case .bool: return .bool
            }
        case .attest, .attestationStatus: return .text
        case .jailbroken: return .bool
        case .entitlement: return .list
        case .riskScore: return .number
        case .claimed(let h): return h == .appVersion || h == .osVersion ? .version : .text
        case .custom: return .claimedText
        }
    }

    /// Every name a condition may use, for error messages (`custom.<key>` last).
    public static let names: [String] = DeviceProperty.allCases.map(\.rawValue)
        + ["attest", "jailbroken", "entitlement", "risk_score", "attestation_status"]
        + FeatureFlagHeader.allCases.map(\.rawValue) + ["custom.<key>"]
}

/// The SDK's targeting headers (SDK 2.1+), each a client-claimed attribute.
public enum FeatureFlagHeader: String, Sendable, CaseIterable {
    case appVersion = "app_version", osVersion = "os_version", deviceModel = "device_model", country,
         userID = "user_id", deviceID = "device_id", locale

    /// The HTTP header (`X-App-Version`).
    public var header: String {
        switch self {
        case .appVersion: return "X-App-Version"
        case .osVersion: return "X-OS-Version"
        case .deviceModel: return "X-Device-Model"
        case .country: return "X-Country"
        case .userID: return "X-User-ID"
        case .deviceID: return "X-Device-ID"
        case .locale: return "X-Locale"
        }
    }
}
