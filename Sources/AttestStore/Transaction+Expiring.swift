/// The ephemeral, expiry-keyed databases: used challenges and rate-limit windows.
///
/// ```
/// challenges  expiry (i64 BE seconds) ‖ challenge id (16 bytes)   → empty
/// rates       window end (i64 BE seconds) ‖ bucket name (UTF-8)   → u32 BE hits
/// ```
/// Keys start with the expiry so `sweepExpired` removes the oldest first with one cursor.
extension Transaction {
    static func expiryKey(_ expiry: Int64, _ suffix: [UInt8]) -> [UInt8] {
        var key = [UInt8]()
        key.reserveCapacity(8 + suffix.count)
        let e = UInt64(bitPattern: expiry)
        for i in stride(from: 56, through: 0, by: -8) { key.append(UInt8(truncatingIfNeeded: e >> UInt64(i))) }
        return key + suffix
    }

    /// Whether the challenge `id` (expiring at `expiry`) was consumed already.
    public func isChallengeUsed(id: [UInt8], expiry: Int64) throws -> Bool {
        try get(.challenges, Self.expiryKey(expiry, id)) != nil
    }

    /// Marks the challenge consumed; `false` when it already was (atomic: NOOVERWRITE).
    public func consumeChallenge(id: [UInt8], expiry: Int64) throws -> Bool {
        try consumeChallengeLater(id: id, expiry: expiry)()
    }

    /// `consumeChallenge` whose outcome the returned closure tells (`insertLater`): on
    /// PostgreSQL the insert rides with the next statement, e.g. the rate windows' first hit.
    public func consumeChallengeLater(id: [UInt8], expiry: Int64) throws -> () throws -> Bool {
        try insertLater(.challenges, Self.expiryKey(expiry, id), [])
    }

    /// Counts one hit in `bucket`'s fixed window ending at `windowEnd`; returns the hits so far.
    public func hitRateWindow(_ bucket: String, windowEnd: Int64) throws -> UInt32 {
        try increment(.rates, Self.expiryKey(windowEnd, Array(bucket.utf8)))
    }
}
