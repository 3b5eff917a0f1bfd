import AttestCore

/// A software App Attest device: one P-256 key, its keyId and its assertion counter.
///
/// `attest` plays `DCAppAttestService.attestKey` (the certificate comes from a `TestPKI`
/// instead of Apple); `assert` plays `generateAssertion`:
/// ```
/// assertion         = { "signature": bstr, "authenticatorData": bstr }      ; CBOR map, this order
/// authenticatorData = rpIDHash (32, SHA-256 of the App ID) ‖ flags (1) ‖ counter (4, big-endian)
/// nonce             = SHA-256(authenticatorData ‖ clientDataHash)
/// signature         = DER ECDSA-Sig-Value: ECDSA P-256 with SHA-256 over the message nonce
///                     (the signed digest is SHA-256(nonce), a hash of the hash)
/// ```
/// so a verifier checks `publicKey.isValidSignature(signature, message: nonce)`.
/// A value type: copy it to fork a device (e.g. to replay from an old state).
public struct SoftwareDevice: Sendable {
    public let key: SigningKey
    /// SHA-256 of the key's uncompressed X9.62 point.
    public let keyID: [UInt8]
    /// The counter of the last assertion made (0 after attestation).
    public var counter: UInt32
    /// Free-form state kept with the device in its state file (e.g. `token`, `appID`).
    public var fields: [String: String]
    /// The flags byte of assertions (App Attest sets none of UP, UV, AT, ED).
    public static let assertionFlags: UInt8 = 0

    /// A device with `key`; fails when it is not a P-256 key.
    public init(key: SigningKey, counter: UInt32 = 0, fields: [String: String] = [:]) throws(AttestError) {
        guard key.kind == .p256 else {
            throw AttestError(.keyInvalid, "an App Attest key is P-256, not \(key.kind.rawValue)")
        }
        self.key = key
        self.keyID = SHA256.hash(key.x962Point)
        self.counter = counter
        self.fields = fields
    }

    /// A device with a fresh key.
    public static func generate() throws(AttestError) -> SoftwareDevice {
        try SoftwareDevice(key: SigningKey.generate(.p256))
    }

    /// The public key as the server stores it after attestation.
    public var publicKey: [UInt8] { key.x962Point }

    /// An attestation object for `clientDataHash`, certified by `pki` at `time`, its receipt
    /// signed by `receipts` when given (else opaque bytes, as before receipts were verified).
    public func attest(clientDataHash: [UInt8], appID: String, environment: AppAttestEnvironment = .production,
                       pki: TestPKI, receipts: TestReceiptAuthority? = nil, at time: Timestamp) throws(AttestError)
        -> (keyID: [UInt8], attestationObject: [UInt8]) {
        var attestation = synthetic(clientDataHash: clientDataHash, appID: appID, environment: environment)
        attestation.receiptAuthority = receipts
        let built = try attestation.build(pki: pki, at: time)
        return (built.keyID, built.attestationObject)
    }

    /// The attestation as a `SyntheticAttestation` to adjust before building.
    public func synthetic(clientDataHash: [UInt8], appID: String,
                          environment: AppAttestEnvironment = .production) -> SyntheticAttestation {
        SyntheticAttestation(deviceKey: key, clientDataHash: clientDataHash, appID: appID, environment: environment)
    }

    /// The next assertion: advances `counter` by one and signs with it.
    public mutating func assert(clientDataHash: [UInt8], appID: String) throws(AttestError) -> [UInt8] {
        let next = counter &+ 1
        let assertion = try self.assertion(clientDataHash: clientDataHash, appID: appID, counter: next)
        counter = next
        return assertion
    }

    /// An assertion at a chosen `counter`, leaving the device's counter alone (for replays and
    /// races). `flags` sets the authenticator data flags byte.
    public func assertion(clientDataHash: [UInt8], appID: String, counter: UInt32,
                          flags: UInt8 = SoftwareDevice.assertionFlags) throws(AttestError) -> [UInt8] {
        var authenticatorData = SHA256.hash(appID.utf8)
        authenticatorData.append(flags)
        authenticatorData += (0..<4).reversed().map { UInt8(truncatingIfNeeded: counter >> ($0 * 8)) }
        let nonce = SHA256.hash(authenticatorData, clientDataHash)
        let signature = try key.sign(nonce)
        return CBORWriter.encode(.map([
            CBORMapEntry(key: .text("signature"), value: .bytes(signature[...])),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(authenticatorData[...])),
        ]))
    }
}
