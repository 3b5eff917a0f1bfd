/// WebAuthn authenticator data as App Attest produces it.
///
/// ```
/// offset  size  field
///      0    32  rpIDHash           SHA-256 of the App ID "TEAMID.bundleId"
///     32     1  flags              0x01 UP, 0x04 UV, 0x40 AT (attested credential data), 0x80 ED
///     33     4  signCount          big-endian counter; 0 in an attestation
///   --- attested credential data, present when AT is set ---
///     37    16  aaguid             "appattestdevelop" or "appattest" + 7 × 0x00
///     53     2  credentialIDLength big-endian L
///     55     L  credentialID       equals the keyId
///   55+L     …  credentialPublicKey COSE_Key (CBOR map)
///   --- then, whatever the ED flag says ---
///      …     …  extensions         CBOR map, e.g. apple_validation_category_01, apple_bundle_version_01
/// ```
/// Apple's 2026 sample has flags 0x40 and still carries an extensions map, so the map is read
/// whenever bytes remain. Anything after it is an error.
public struct AuthenticatorData: Sendable, Hashable {
    public static let minimumLength = 37
    public static let attestedCredentialDataFlag: UInt8 = 0x40
    public static let extensionDataFlag: UInt8 = 0x80

    public let rpIDHash: ArraySlice<UInt8>
    public let flags: UInt8
    public let signCount: UInt32
    public let aaguid: ArraySlice<UInt8>?
    public let credentialID: ArraySlice<UInt8>?
    public let credentialPublicKey: COSEKey?
    /// The trailing CBOR map, when present.
    public let extensions: CBORValue?

    public init(bytes: ArraySlice<UInt8>) throws(AttestError) {
        guard bytes.count >= Self.minimumLength else {
            throw AttestError(.authenticatorDataMalformed, "\(bytes.count) bytes, fewer than \(Self.minimumLength)")
        }
        let s = bytes.startIndex
        rpIDHash = bytes[s..<(s + 32)]
        flags = bytes[s + 32]
        signCount = bytes[(s + 33)..<(s + 37)].reduce(0) { $0 << 8 | UInt32($1) }
        var cursor = bytes[(s + 37)...]
        if flags & Self.attestedCredentialDataFlag != 0 {
            guard cursor.count >= 18 else {
                throw AttestError(.authenticatorDataMalformed, "attested credential data truncated")
            }
            let c = cursor.startIndex
            aaguid = cursor[c..<(c + 16)]
            let length = Int(cursor[c + 16]) << 8 | Int(cursor[c + 17])
            cursor = cursor.dropFirst(18)
            guard cursor.count >= length else {
                throw AttestError(.authenticatorDataMalformed, "credentialID of \(length) bytes truncated")
            }
            credentialID = cursor.prefix(length)
            cursor = cursor.dropFirst(length)
            do {
                credentialPublicKey = try COSEKey(CBORReader.decodeFirst(&cursor))
            } catch {
                throw AttestError(.authenticatorDataMalformed, "credentialPublicKey: \(error.reason)")
            }
        } else {
            aaguid = nil
            credentialID = nil
            credentialPublicKey = nil
        }
        if cursor.isEmpty {
            extensions = nil
        } else {
            let map: CBORValue
            do { map = try CBORReader.decodeFirst(&cursor) } catch {
                throw AttestError(.authenticatorDataMalformed, "extensions: \(error.reason)")
            }
            guard map.mapEntries != nil else {
                throw AttestError(.authenticatorDataMalformed, "extensions are not a CBOR map")
            }
            guard cursor.isEmpty else {
                throw AttestError(.authenticatorDataMalformed, "\(cursor.count) bytes after the extensions map")
            }
            extensions = map
        }
    }

    /// `apple_validation_category_01`: a 4-byte little-endian unsigned integer.
    public var validationCategory: UInt32? {
        guard let value = extensions?[text: "apple_validation_category_01"] else { return nil }
        if let n = value.intValue, n >= 0, n <= Int64(UInt32.max) { return UInt32(n) }
        guard let b = value.bytesValue, b.count == 4 else { return nil }
        return b.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `apple_bundle_version_01`: the app's bundle version string.
    public var bundleVersion: String? { extensions?[text: "apple_bundle_version_01"]?.textValue }
}
