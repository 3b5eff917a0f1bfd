import AttestCore

/// One token signing key of `keys/index.json` and its lifecycle, as times.
///
/// ```
/// {"kid": RFC 7638 thumbprint, "algorithm": "ES256" | "RS256", "file": "key-<unix>-<kid8>.pem",
///  "jwk": {public JWK, as served}, "publishAt": ISO 8601, "activateAt": ISO 8601,
///  "retireAt": ISO 8601 | null, "withdrawAt": ISO 8601 | null}
/// ```
/// Its state at a time `t` (the first rule that applies):
/// - `withdrawn`  withdrawAt ≤ t: out of jwks.json (the entry goes at the next rotation);
/// - `retired`    retireAt ≤ t: signs nothing, stays in jwks.json so the tokens it signed
///                verify; its private key file is deleted;
/// - `scheduled`  t < publishAt: not published yet;
/// - `pending`    t < activateAt: in jwks.json, not signing yet;
/// - `active`     otherwise: the signer.
public struct KeyEntry: Sendable, Equatable {
    public enum State: String, Sendable {
        case scheduled, pending, active, retired, withdrawn

        /// Whether jwks.json lists the key in this state.
        public var isPublished: Bool { self == .pending || self == .active || self == .retired }
    }

    public let kid: String
    public let algorithm: String
    /// The private key's file name in `keys/` (PKCS #8 PEM, 0600).
    public let file: String
    /// The public JWK (`JWK.publicJWK`); nil only for entries of an index written before
    /// lifecycles, until the key ring derives it from the private key.
    public var jwk: JSONValue?
    public var publishAt: Timestamp
    public var activateAt: Timestamp
    public var retireAt: Timestamp?
    public var withdrawAt: Timestamp?

    public init(kid: String, algorithm: String, file: String, jwk: JSONValue?, publishAt: Timestamp,
                activateAt: Timestamp, retireAt: Timestamp? = nil, withdrawAt: Timestamp? = nil) {
        self.kid = kid
        self.algorithm = algorithm
        self.file = file
        self.jwk = jwk
        self.publishAt = publishAt
        self.activateAt = activateAt
        self.retireAt = retireAt
        self.withdrawAt = withdrawAt
    }

    public func state(at t: Timestamp) -> State {
        if let withdrawAt, withdrawAt <= t { return .withdrawn }
        if let retireAt, retireAt <= t { return .retired }
        if t < publishAt { return .scheduled }
        return t < activateAt ? .pending : .active
    }

    /// The times at which the state may change.
    var transitions: [Timestamp] { [publishAt, activateAt, retireAt, withdrawAt].compactMap { $0 } }
}
