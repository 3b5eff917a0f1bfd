import AttestCore

/// The percentage rollout's bucket: a stable number 0–99 per (device, flag).
///
/// ```
/// bucket = UInt64(bigEndian: SHA-256(identity ‖ 0x00 ‖ UTF-8(flagKey))[0..<8]) % 100
/// ```
/// `identity` is the device's lineage digest (`LineageKey.digest`, 16 bytes) for a token, so a
/// device that attests a new key for the same fingerprint keeps its buckets; for an API-key
/// caller it is the UTF-8 of `X-Device-ID`. A rollout of P percent admits buckets below P:
/// 0 admits none, 100 all (even a caller without an identity).
public enum FeatureFlagBucket {
    public static func bucket(identity: [UInt8], key: String) -> Int {
        let digest = SHA256.hash(identity + [0] + Array(key.utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int(value % 100)
    }

    /// Whether `percent` admits the caller with `identity` (nil: none, admitted only at 100).
    public static func admits(percent: UInt8, identity: [UInt8]?, key: String) -> Bool {
        if percent >= 100 { return true }
        guard percent > 0, let identity else { return false }
        return bucket(identity: identity, key: key) < Int(percent)
    }
}
