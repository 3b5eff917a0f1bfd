import AttestCore
import AttestStore

/// Who a monthly-active-device count is for (docs/contract.md §4): 16 bytes of SHA-256 over a labelled
/// identity, so records stay small and no client string is used as a key.
///
/// - `deviceFingerprint` when the device sent one, scoped to its app: a device whose App
///   Attest key is regenerated mid-month counts once, and one tenant's fingerprints never
///   meet another's: `"fp" ‖ 0 ‖ appID ‖ 0 ‖ fingerprint`;
/// - else its deviceId: `"dev" ‖ 0 ‖ deviceId`;
/// - an API-key device (simulator and CI builds) by the deviceId it reports, scoped to the
///   organization: `"key" ‖ 0 ‖ org ‖ 0 ‖ deviceId`.
struct UsageIdentity: Hashable {
    let bytes: [UInt8]

    private init(_ parts: [String]) {
        bytes = Array(SHA256.hash(Array(parts.joined(separator: "\u{0}").utf8)).prefix(16))
    }

    static func device(appID: String, fingerprint: String, deviceID: String) -> UsageIdentity {
        fingerprint.isEmpty ? UsageIdentity(["dev", deviceID]) : UsageIdentity(["fp", appID, fingerprint])
    }

    static func device(_ device: DeviceRecord) -> UsageIdentity {
        .device(appID: device.appID, fingerprint: device.fingerprint, deviceID: device.deviceID)
    }

    static func apiKeyDevice(org: String, deviceID: String) -> UsageIdentity { UsageIdentity(["key", org, deviceID]) }
}
