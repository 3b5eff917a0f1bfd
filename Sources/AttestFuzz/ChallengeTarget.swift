import AttestCore
import AttestService

/// The challenge decoder, twice per input: the input as challenge text (almost always
/// refused as malformed or forged), and the input's first 26 bytes made authentic — signed
/// with the fuzz secret as the issuer would, in either version — so that times and binding
/// are fuzzed too.
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
        return FuzzTarget(name: "challenge",
                          summary: "ChallengeAuthority.check on raw text and on re-signed bytes") { input in
            _ = try? authority.check(String(decoding: input, as: UTF8.self), appID: appID, now: now)
            guard input.count >= 26 else { return }
            var prefix = Array(input.prefix(26))
            prefix[0] = 1 + (prefix[0] & 1)  // version 1 (expiry i64) or 2 (issued u32, expiry u32)
            prefix[1] &= 1
            let bound = prefix[1] == 1
            let text = Base64.encode(prefix + mac.authenticate(prefix, (bound ? appID : "").utf8).prefix(16), url: true)
            func number(_ range: Range<Int>) -> UInt64 { prefix[range].reduce(0) { $0 << 8 | UInt64($1) } }
            let version2 = prefix[0] == 2
            let expiry = version2 ? Int64(number(6..<10)) : Int64(bitPattern: number(2..<10))
            let issued = version2 ? Int64(number(2..<6)) : nil
            do throws(ServiceError) {
                let token = try authority.check(text, appID: appID, now: now, requireBinding: false)
                expect(now.seconds <= expiry, "accepted a challenge past its expiry")
                expect(token.id == Array(prefix[10..<26]) && token.expiry.seconds == expiry && token.boundToApp == bound
                       && token.issued?.seconds == issued, "the token differs from what was signed")
            } catch {
                expect(error.code == .challengeExpired && now.seconds > expiry,
                       "authentic challenge refused: \(error.code)")
            }
        }
    }
}
