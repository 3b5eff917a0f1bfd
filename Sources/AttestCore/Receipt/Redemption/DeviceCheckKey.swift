/// A team's DeviceCheck key: what signs the provider token (`ProviderToken`) that redeeming a
/// receipt with Apple needs.
///
/// Apple hands it out once as `AuthKey_<KEYID>.p8`: an unencrypted PKCS #8 P-256 private key in
/// PEM (`-----BEGIN PRIVATE KEY-----`). The team id and key id are ten upper-case letters or
/// digits; both name files and go into a JWT, so anything else is refused here.
public struct DeviceCheckKey: Sendable {
    public let teamID: String
    public let keyID: String
    public let key: SigningKey

    /// The largest .p8 file read (Apple's are about 250 bytes).
    public static let maxPEMBytes = 4096

    /// Parses `pem` and checks the ids; throws `.keyInvalid` (not PEM, not P-256) or `.keyID`.
    /// The error never quotes the key.
    public init(teamID: String, keyID: String, pem: String) throws(AttestError) {
        try Self.checkIdentifier(teamID, "team id")
        try Self.checkIdentifier(keyID, "key id")
        guard pem.utf8.count <= Self.maxPEMBytes else {
            throw AttestError(.keyInvalid, "a .p8 key is at most \(Self.maxPEMBytes) bytes")
        }
        guard pem.contains("-----BEGIN PRIVATE KEY-----") else {
            throw AttestError(.keyInvalid, "not a PKCS #8 PEM private key (-----BEGIN PRIVATE KEY-----)")
        }
        let key: SigningKey
        do { key = try SigningKey(pemEncoded: pem) } catch {
            throw AttestError(.keyInvalid, "the .p8 file does not hold a private key")
        }
        guard key.kind == .p256 else {
            throw AttestError(.keyInvalid, "a DeviceCheck key is P-256, this is \(key.kind.rawValue)")
        }
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
    }

    /// Whether `text` is an Apple team or key id: exactly ten of A–Z and 0–9.
    public static func isIdentifier(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    static func checkIdentifier(_ text: String, _ what: String) throws(AttestError) {
        guard isIdentifier(text) else {
            throw AttestError(.keyID, "an Apple \(what) is ten upper-case letters or digits")
        }
    }

    /// The team of an App ID (`TEAMID.bundle.id`), or nil when it has none.
    public static func teamID(ofAppID appID: String) -> String? {
        guard let dot = appID.firstIndex(of: ".") else { return nil }
        let team = String(appID[..<dot])
        return isIdentifier(team) ? team : nil
    }
}
