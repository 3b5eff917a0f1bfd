import AttestCore

/// Whom an override is for: a device by the server's deviceId, or an SDK's `X-Device-ID`
/// header value (client-claimed). Key kind byte: 0 device, 1 sdk.
public enum FeatureFlagOverrideSubject: Hashable, Sendable {
    case device(String)
    case sdk(String)

    var kind: UInt8 {
        switch self {
        case .device: return 0
        case .sdk: return 1
        }
    }

    public var value: String {
        switch self {
        case .device(let id), .sdk(let id): return id
        }
    }

    init(kind: UInt8, value: String) throws {
        switch kind {
        case 0: self = .device(value)
        case 1: self = .sdk(value)
        default: throw StoreError(.corrupt, "feature flag override subject kind \(kind)")
        }
    }
}

/// One flag's value forced for one subject, optionally until a time.
///
/// Key in `feature_flag_overrides`: appID ‖ 0x00 ‖ kind u8 ‖ subject (UTF-8, no 0x00) ‖ 0x00
/// ‖ flagKey, so a subject's overrides in an app are one prefix scan. Layout v1:
/// ```
/// u8 1 | valueJSON string | expiresAt i64 (0 = never) | createdAt i64 | note string (who/why)
/// ```
public struct FeatureFlagOverrideRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "feature flag override"

    /// Not part of the value: the key.
    public var subject: FeatureFlagOverrideSubject
    /// Not part of the value: the key.
    public var flagKey: String
    public var valueJSON: String
    public var expiresAt: Timestamp?
    public var createdAt: Timestamp
    public var note: String

    public init(subject: FeatureFlagOverrideSubject, flagKey: String, valueJSON: String, expiresAt: Timestamp?,
                createdAt: Timestamp, note: String) {
        self.subject = subject
        self.flagKey = flagKey
        self.valueJSON = valueJSON
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.note = note
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(valueJSON)
        w.i64(expiresAt?.seconds ?? 0)
        w.i64(createdAt.seconds)
        w.string(note)
    }

    /// `subject` and `flagKey` are not part of the value: the transaction sets them from the key.
    public init(from r: inout BinaryReader) throws {
        subject = .device("")
        flagKey = ""
        valueJSON = try r.string()
        let expires = try r.i64()
        expiresAt = expires == 0 ? nil : Timestamp(seconds: expires)
        createdAt = Timestamp(seconds: try r.i64())
        note = try r.string()
    }
}
