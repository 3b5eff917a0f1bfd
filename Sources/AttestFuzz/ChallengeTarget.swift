import AttestCore
import AttestService

/// The challenge decoder, twice per input: the input as challenge text (almost always
/// refused as malformed or forged), and the input's first 26 bytes made authentic — signed
/// with the fuzz secret as the issuer would — so that expiry and binding are fuzzed too.
///
/// Properties: an authentic challenge is never `challenge_invalid` when it is bound to the
/// app; it is accepted before its expiry and `challenge_expired` after it, carrying its id.
enum ChallengeTarget {
    static let secret = [UInt8](repeating: 0x5A, count: 32)
    static let now = Timestamp(seconds: 1_780_000_000)

    static func make() -> FuzzTarget {
        let authority = ChallengeAuthority(secret: secret)
        let mac = HMACSHA256(key: secret)
        let appID = FuzzService.appID
        return FuzzTarget(name: "challenge", summary: "ChallengeAuthority.check on raw text and on re-signed bytes") { input in
            _ = try? authority.check(String(decoding: input, as: UTF8.self), appID: appID, now: now)
            guard input.count >= 26 else { return }
            var prefix = Array(input.prefix(26))
            prefix[0] = 1
            prefix[1] &= 1
            let bound = prefix[1] == 1
            let text = Base64.encode(prefix + mac.authenticate(prefix, (bound ? appID : "").utf8).prefix(16), url: true)
            let expiry = Int64(bitPattern: prefix[2..<10].reduce(0) { $0 << 8 | UInt64($1) })
            do throws(ServiceError) {
                let token = try authority.check(text, appID: appID, now: now, requireBinding: false)
                expect(now.seconds <= expiry, "accepted a challenge past its expiry")
                expect(token.id == Array(prefix[10..<26]) && token.expiry.seconds == expiry && token.boundToApp == bound,
                       "the token differs from what was signed")
            } catch {
                expect(error.code == .challengeExpired && now.seconds > expiry, "authentic challenge refused: \(error.code)")
            }
        }
    }
}
