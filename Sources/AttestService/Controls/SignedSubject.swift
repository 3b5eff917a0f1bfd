import AttestCore

/// A subject id vouched for by the organization's own backend, sent by the device as its
/// `subjectId` (link policy `signed`):
///
/// ```
/// v1.<subject>.<expiry>.<mac>
///   subject  1–64 bytes of A-Z a-z 0-9 - _ . : @ +  (what is linked and shown; may hold dots)
///   expiry   unix seconds, 1–10 decimal digits
///   mac      base64url, no padding (43 characters), of
///            HMAC-SHA-256(key: the organization's subject secret, its UTF-8 as is,
///                         message: "v1.<subject>.<expiry>")
/// ```
/// Read from the right: the last `.` starts the MAC and the one before it the expiry (neither
/// can hold a dot), so the split is unambiguous however many dots the subject has. The subject's
/// small alphabet keeps the signed text byte-identical in any language and JSON encoder, and
/// the whole value within `subjectId`'s 128 bytes. The MAC does not name the organization:
/// each organization's secret is 32 random bytes this service made (it cannot be set by hand),
/// so a value verifies under that organization only. A value is accepted until
/// `expiry + clockSkew`, to forgive a backend whose clock runs behind this host's.
public struct SignedSubject: Sendable, Equatable {
    public static let prefix = "v1."
    public static let subjectBytes = 64
    /// Seconds past its expiry a value is still accepted.
    public static let clockSkew: Int64 = 60
    static let macCharacters = 43
    static let expiryDigits = 10
    static let subjectAlphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:@+".utf8)
    static let macAlphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public let subject: String
    public let expiry: Timestamp
    /// The presented MAC's 43 characters.
    let mac: [UInt8]

    /// Whether `subject` can be signed: 1–64 bytes of the subject alphabet.
    public static func isSignable(_ subject: String) -> Bool {
        !subject.isEmpty && subject.utf8.count <= subjectBytes && subject.utf8.allSatisfy(subjectAlphabet.contains)
    }

    /// The value's parts, or `nil` when `text` is not in the format (nothing checked yet).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        let dot = UInt8(ascii: ".")
        guard text.hasPrefix(Self.prefix), let macDot = bytes.lastIndex(of: dot), macDot > Self.prefix.utf8.count,
              let expiryDot = bytes[..<macDot].lastIndex(of: dot), expiryDot >= Self.prefix.utf8.count else {
                  return nil
              }
        let subject = String(decoding: bytes[Self.prefix.utf8.count..<expiryDot], as: UTF8.self)
        let digits = bytes[(expiryDot + 1)..<macDot], mac = Array(bytes[(macDot + 1)...])
        guard Self.isSignable(subject), (1...Self.expiryDigits).contains(digits.count),
              digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let seconds = Int64(String(decoding: digits, as: UTF8.self)),
              mac.count == Self.macCharacters, mac.allSatisfy(Self.macAlphabet.contains) else { return nil }
        self.subject = subject
        self.expiry = Timestamp(seconds: seconds)
        self.mac = mac
    }

    /// The text the MAC is computed over: `v1.<subject>.<expiry>`.
    static func message(subject: String, expiry: Timestamp) -> String { "\(prefix)\(subject).\(expiry.seconds)" }

    /// Whether the MAC is `key`'s over this value, compared in constant time.
    func verifies(under key: HMACSHA256) -> Bool {
        let expected = Base64.encode(key.authenticate(Self.message(subject: subject, expiry: expiry).utf8), url: true)
        return constantTimeEqual(Array(expected.utf8), mac)
    }

    /// A value for `subject` (which must be signable) valid until `expiry`: what the
    /// organization's backend makes (`attestctl subject sign` for tests).
    public static func mint(subject: String, expiry: Timestamp, secret: String) -> String {
        let message = Self.message(subject: subject, expiry: expiry)
        return message + "." + Base64.encode(HMACSHA256(key: Array(secret.utf8)).authenticate(message.utf8), url: true)
    }

    /// A new organization subject secret: `asl_` and 32 random bytes in base64url.
    public static func newSecret(random: any RandomSource) -> String {
        "asl_" + Base64.encode(random.bytes(32), url: true)
    }
}
