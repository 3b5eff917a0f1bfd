import AttestCore

/// Issues and checks stateless challenges.
///
/// ```
/// challenge = base64url( version u8 = 2 | flags u8 (bit 0: bound to an app)
///                        | issued u32 BE | expiry u32 BE (Unix seconds)
///                        | id 16 random bytes | tag 16 bytes )
/// tag       = HMAC-SHA-256(secret, version | flags | issued | expiry | id | appID if bound)[0..<16]
/// ```
/// Version 1, which older builds issued and which is still accepted, has `expiry i64 BE` in
/// place of the two times (same length). The issue time lets admission refuse exactly the
/// challenges issued before the store forgot which were used (`Store.ephemeralResetAt`),
/// whatever lifetime they were issued with; for version 1 it can only infer that from today's
/// `challenge.ttlSeconds`.
/// Issuing writes nothing. Single use is enforced when a challenge is consumed: its id and
/// expiry go into the ephemeral `challenges` database, kept until the expiry passes.
public struct ChallengeAuthority: Sendable {
    public static let encodedLength = 42
    private let mac: HMACSHA256

    public init(secret: [UInt8]) { mac = HMACSHA256(key: secret) }

    /// A challenge that is one authentic presentation of `id`.
    public struct Token: Sendable, Hashable {
        public let id: [UInt8]
        public let expiry: Timestamp
        public let boundToApp: Bool
        /// When it was issued; `nil` for a version-1 challenge (it does not say).
        public let issued: Timestamp?
    }

    /// A new challenge bound to `appID` (or to no app), issued at `issued`. Times outside
    /// 1970…2106 (a clock gone wrong) are clamped into it.
    /// Built in one stack buffer (every challenge request runs it).
    public func issue(appID: String?, issued: Timestamp, expiry: Timestamp, id: [UInt8]) -> String {
        precondition(id.count == 16)
        // The 42 challenge bytes, then the 32-byte MAC whose first 16 bytes end them.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.encodedLength + 16) { buffer in
            buffer[0] = 2
            buffer[1] = appID == nil ? 0 : 1
            func put(_ time: Timestamp, at: Int) {
                let seconds = UInt32(clamping: time.seconds)
                for i in 0..<4 { buffer[at + i] = UInt8(truncatingIfNeeded: seconds >> UInt32(24 - 8 * i)) }
            }
            put(issued, at: 2)
            put(expiry, at: 6)
            for i in 0..<16 { buffer[10 + i] = id[i] }
            mac.authenticate(UnsafeBufferPointer(rebasing: buffer[0..<26]), (appID ?? "").utf8,
                             into: UnsafeMutableBufferPointer(rebasing: buffer[26..<58]))
            return Base64.encode(UnsafeBufferPointer(rebasing: buffer[0..<Self.encodedLength]), url: true)
        }
    }

    /// A version-1 challenge, as builds before version 2 issued them (tests of the upgrade).
    func issueVersion1(appID: String?, expiry: Timestamp, id: [UInt8]) -> String {
        var bytes: [UInt8] = [1, appID == nil ? 0 : 1]
        let e = UInt64(bitPattern: expiry.seconds)
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: e >> UInt64(shift)))
        }
        bytes += id
        bytes += tag(bytes, appID: appID)
        return Base64.encode(bytes, url: true)
    }

    private func tag(_ prefix: [UInt8], appID: String?) -> ArraySlice<UInt8> {
        mac.authenticate(prefix, (appID ?? "").utf8).prefix(16)
    }

    /// Checks authenticity, app binding and expiry (not single use: that needs the store).
    /// - Throws: `challenge_invalid` (not ours, forged, bound to another app, or unbound when
    ///   `requireBinding`), `challenge_expired` (authentic but past its expiry).
    public func check(_ challenge: String, appID: String, now: Timestamp,
                      requireBinding: Bool = true) throws(ServiceError) -> Token {
        guard challenge.utf8.count == 56, let bytes = Base64.decode(challenge), bytes.count == Self.encodedLength,
              bytes[0] == 1 || bytes[0] == 2, bytes[1] <= 1 else {
            throw ServiceError.challengeInvalid(log: "malformed challenge")
        }
        let bound = bytes[1] == 1
        guard constantTimeEqual(tag(Array(bytes[0..<26]), appID: bound ? appID : nil), bytes[26..<42]) else {
            throw ServiceError.challengeInvalid(log: bound ? "tag mismatch (forged, or issued for another app)"
                                                           : "tag mismatch")
        }
        // Validate and refresh always carry the app headers, and so does the SDK's challenge
        // request: an unbound challenge could be spent on any app, so none is accepted.
        guard bound || !requireBinding else {
            throw ServiceError.challengeInvalid(log: "challenge issued without X-Bundle-ID/X-Team-ID")
        }
        func number(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(0) { $0 << 8 | UInt64($1) } }
        let expiry: Timestamp, issued: Timestamp?
        if bytes[0] == 2 {
            issued = Timestamp(seconds: Int64(number(2..<6)))
            expiry = Timestamp(seconds: Int64(number(6..<10)))
        } else {
            issued = nil
            expiry = Timestamp(seconds: Int64(bitPattern: number(2..<10)))
        }
        let token = Token(id: Array(bytes[10..<26]), expiry: expiry, boundToApp: bound, issued: issued)
        guard now <= expiry else {
            throw ServiceError(.challengeExpired,
                               "Challenge expired: challenges are valid for a few minutes. "
                               + "Request a new one from GET /api/v1/attestation/challenge.",
                               hint: "Request a fresh challenge immediately before attesting or asserting.",
                               log: "expired at \(expiry.iso8601)")
        }
        return token
    }
}

extension ServiceError {
    static func challengeInvalid(log: String) -> ServiceError {
        ServiceError(.challengeInvalid,
                     "Challenge not found or invalid. Request a new one from GET /api/v1/attestation/challenge.",
                     hint: "Send the challenge string exactly as the challenge endpoint returned it, with the same "
                           + "X-Bundle-ID and X-Team-ID.",
                     log: log)
    }

    static let challengeAlreadyUsed = ServiceError(
        .challengeAlreadyUsed, "Challenge already used: each challenge is single-use. "
                               + "Request a new one from GET /api/v1/attestation/challenge.",
        hint: "Never cache or share challenges between attempts.")
}
