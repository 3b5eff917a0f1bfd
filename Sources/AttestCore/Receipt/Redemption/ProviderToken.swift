/// The provider token sent with each redemption: an ES256 JWT signed with the team's
/// DeviceCheck key, made like an APNs provider token and cached.
///
/// ```
/// header = {"alg": "ES256", "kid": <key id>}
/// claims = {"iss": <team id>, "iat": <seconds since 1970>}
/// ```
/// Apple accepts a token for an hour (APNs' rule; App Attest documents none) and may refuse
/// one renewed too often, so a token is reused for `renewSeconds` (25 minutes) and then
/// replaced: well inside the hour, never more than every 20 minutes. Time is injected.
/// Not thread-safe: one per redeeming thread.
public final class ProviderToken {
    public static let renewSeconds: Int64 = 25 * 60
    public let teamID: String
    public let keyID: String
    /// The signing key's public half: a key replaced under the same key id (a wrong .p8 added
    /// again, right this time) is a different key, and its tokens are new ones.
    public let subjectPublicKeyInfo: [UInt8]
    private let signer: JWTSigner
    private var cached: (token: String, issuedAt: Timestamp)?

    public init(key: DeviceCheckKey) throws(AttestError) {
        teamID = key.teamID
        keyID = key.keyID
        subjectPublicKeyInfo = key.key.subjectPublicKeyInfo
        signer = try JWTSigner(key: key.key, providerKeyID: key.keyID)
    }

    /// The token to send at `now`: the cached one while it is younger than `renewSeconds` (and
    /// not from the future: a clock set back gets a new one), else a new one issued at `now`.
    public func token(at now: Timestamp) throws(AttestError) -> String {
        if let cached, cached.issuedAt <= now, now.seconds - cached.issuedAt.seconds < Self.renewSeconds {
            return cached.token
        }
        let token = try signer.sign(["iss": .string(teamID), "iat": .int(now.seconds)])
        cached = (token, now)
        return token
    }

    /// When the token `token(at:)` returns was issued (nil before the first).
    public var issuedAt: Timestamp? { cached?.issuedAt }
}
