/// The longest value, in UTF-8 bytes, stored for each client-supplied text field. Longer values
/// are refused with 400 `bad_request` naming the field (docs/api.md, "Decisions"); nothing a client
/// sends is stored unbounded.
///
/// | field | bytes |
/// |---|---|
/// | `deviceModel`, `osVersion`, `appVersion`, `appBuildNumber`, `platform` | 64 |
/// | `deviceFingerprint`, `subjectId` | 128 |
/// | the attestation's `receipt` | 16384 |
enum FieldLimits {
    static let metadataBytes = 64
    static let identifierBytes = 128
    static let receiptBytes = 16_384

    static func maximumBytes(_ field: String) -> Int {
        switch field {
        case "deviceFingerprint", "subjectId": return identifierBytes
        default: return metadataBytes
        }
    }
}
