import AttestCore

/// Builds attestation objects the way `DCAppAttestService.attestKey` does, signed by a
/// `TestPKI`, with one knob per step of Apple's validation so every failure can be produced.
///
/// ```
/// attestationObject = {                                   ; CBOR map, keys in this order
///     "fmt": "apple-appattest",                           ; knob: fmt (nil omits it)
///     "attStmt": {
///         "x5c": [ credCert, intermediate ],              ; knobs: includesX5C, x5c, certificateDefect
///         "receipt": bstr                                 ; knobs: includesReceipt, receipt, receiptAuthority
///     },
///     "authData": bstr
/// }
/// authData = rpIDHash (32) ‖ flags (1) ‖ signCount (4, big-endian)
///          ‖ aaguid (16) ‖ credentialIDLength (2, big-endian) ‖ credentialID ‖ COSE_Key
///          ‖ extensions (CBOR map, when not nil)
/// credCert nonce = SHA-256(authData ‖ clientDataHash)     ; knob: certificateNonce
/// ```
/// Every knob defaults to what a genuine device produces, so an untouched value verifies.
public struct SyntheticAttestation: Sendable {
    /// The device key: the credential certificate certifies it, keyId is SHA-256 of its point.
    public var deviceKey: SigningKey
    /// Opaque bytes appended to authData for the nonce (the server's challenge hash).
    public var clientDataHash: [UInt8]
    /// `TEAMID.bundleId`.
    public var appID: String
    public var environment: AppAttestEnvironment

    // Step 1: the format.
    /// The `fmt` text; `nil` leaves the key out.
    public var fmt: String? = AttestationObject.format
    public var includesX5C = true
    public var includesReceipt = true
    /// Opaque to the attestation verifier (Apple's is CMS); used as is without `receiptAuthority`.
    public var receipt: [UInt8] = Array("AttestEdge synthetic receipt".utf8)
    /// Signs an ATTEST receipt about the credential certificate `build` issues (App ID,
    /// environment `sandbox`/`production`, created at the build's time), in place of `receipt`.
    public var receiptAuthority: TestReceiptAuthority? = nil
    /// The receipt's App ID when it is not `appID` (attacks: a receipt for another app).
    public var receiptAppID: String? = nil
    /// The receipt's field 3 when it is not the credential certificate (attacks: another key's).
    public var receiptCredentialCertificate: [UInt8]? = nil
    // Step 2: the chain.
    /// Breaks the credential certificate on purpose (see `TestPKI.Defect`).
    public var certificateDefect: TestPKI.Defect? = nil
    /// Replaces `x5c` entirely (e.g. a leaf alone, or another PKI's intermediate).
    public var x5c: [[UInt8]]? = nil
    /// The credential certificate's validity; default from a day before `at` to two days after.
    public var certificateNotBefore: Timestamp? = nil
    public var certificateNotAfter: Timestamp? = nil
    // Steps 3–4: the nonce.
    /// The nonce put in the certificate instead of SHA-256(authData ‖ clientDataHash).
    public var certificateNonce: [UInt8]? = nil
    // Step 5: the key identifier.
    /// A key certified instead of the device's (keyId stays the device's).
    public var certificateKey: ECPublicKey? = nil
    // Step 6: the App ID.
    /// The App ID hashed into rpIDHash instead of `appID`.
    public var rpIDAppID: String? = nil
    // Step 7: the counter.
    public var signCount: UInt32 = 0
    // Step 8: the environment.
    /// The aaguid instead of `environment`'s (any length: the credential data shifts with it).
    public var aaguid: [UInt8]? = nil
    // Step 9: the credential id.
    /// The credentialID instead of keyId.
    public var credentialID: [UInt8]? = nil
    // Layout.
    /// Default AT (0x40) only, like Apple's sample.
    public var flags: UInt8 = AuthenticatorData.attestedCredentialDataFlag
    /// The trailing extensions map; `nil` leaves it out.
    public var extensions: CBORValue? = SyntheticAttestation.appleExtensions()

    public init(deviceKey: SigningKey, clientDataHash: [UInt8], appID: String,
                environment: AppAttestEnvironment = .production) {
        self.deviceKey = deviceKey
        self.clientDataHash = clientDataHash
        self.appID = appID
        self.environment = environment
    }

    /// SHA-256 of the device key's X9.62 point: what `generateKey` returns.
    public var keyID: [UInt8] { SHA256.hash(deviceKey.x962Point) }

    /// The extensions map Apple's 2026 sample carries:
    /// `{ "apple_bundle_version_01": text, "apple_validation_category_01": bstr (4 bytes, little-endian) }`.
    public static func appleExtensions(bundleVersion: String = "1.0", validationCategory: UInt32 = 1) -> CBORValue {
        .map([
            CBORMapEntry(key: .text("apple_bundle_version_01"), value: .text(bundleVersion)),
            CBORMapEntry(key: .text("apple_validation_category_01"),
                         value: .bytes((0..<4).map { UInt8(truncatingIfNeeded: validationCategory >> ($0 * 8)) }[...])),
        ])
    }

    /// The authenticator data, laid out as in the type's comment.
    public var authenticatorData: [UInt8] {
        var out = SHA256.hash((rpIDAppID ?? appID).utf8)
        out.append(flags)
        out += (0..<4).reversed().map { UInt8(truncatingIfNeeded: signCount >> ($0 * 8)) }
        out += aaguid ?? environment.aaguid
        let id = credentialID ?? keyID
        out += [UInt8(truncatingIfNeeded: id.count >> 8), UInt8(truncatingIfNeeded: id.count)] + id
        CBORWriter.append(COSEKey.encode(x962Point: deviceKey.x962Point), to: &out)
        if let extensions { CBORWriter.append(extensions, to: &out) }
        return out
    }

    /// What `build` made, with the pieces tests compare against.
    public struct Built: Sendable {
        public let keyID: [UInt8]
        public let attestationObject: [UInt8]
        public let authenticatorData: [UInt8]
        public let credentialCertificate: [UInt8]
        /// SHA-256(authData ‖ clientDataHash), whatever the certificate carries.
        public let nonce: [UInt8]
    }

    /// Issues the credential certificate from `pki` for time `at` and encodes the object.
    public func build(pki: TestPKI, at time: Timestamp) throws(AttestError) -> Built {
        let authData = authenticatorData
        let nonce = SHA256.hash(authData, clientDataHash)
        let certified: ECPublicKey
        if let certificateKey { certified = certificateKey } else { certified = try deviceKey.publicKey() }
        let leaf = try pki.issueCredentialCertificate(
            for: certified, nonce: certificateNonce ?? nonce,
            notBefore: certificateNotBefore ?? time - 86_400, notAfter: certificateNotAfter ?? time + 2 * 86_400,
            defect: certificateDefect)
        var statement = [CBORMapEntry]()
        if includesX5C {
            let chain = x5c ?? [leaf, pki.intermediateDER]
            statement.append(CBORMapEntry(key: .text("x5c"), value: .array(chain.map { .bytes($0[...]) })))
        }
        if includesReceipt {
            var bytes = receipt
            if let receiptAuthority {
                bytes = try receiptAuthority.receipt(TestReceiptAuthority.payload(TestReceiptAuthority.attributes(
                    kind: .attest, appID: receiptAppID ?? appID,
                    credentialCertificate: receiptCredentialCertificate ?? leaf, createdAt: time,
                    environment: environment == .production ? "production" : "sandbox")))
            }
            statement.append(CBORMapEntry(key: .text("receipt"), value: .bytes(bytes[...])))
        }
        var root = [CBORMapEntry]()
        if let fmt { root.append(CBORMapEntry(key: .text("fmt"), value: .text(fmt))) }
        root.append(CBORMapEntry(key: .text("attStmt"), value: .map(statement)))
        root.append(CBORMapEntry(key: .text("authData"), value: .bytes(authData[...])))
        return Built(keyID: keyID, attestationObject: CBORWriter.encode(.map(root)), authenticatorData: authData,
                     credentialCertificate: leaf, nonce: nonce)
    }
}
