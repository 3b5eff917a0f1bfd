import AttestCore

/// Heartbeat tokens whose signature this worker has already verified, by the SHA-256 of the
/// token's exact bytes, with the claims a heartbeat judges (`server.tokenCacheEntries`).
///
/// A device sends the same token with every heartbeat (every 120 s) for the token's lifetime
/// (3600 s by default), about 30 times, and checking its ES256 signature was most of a
/// heartbeat: 833k of 1,006k instructions under callgrind. A token whose bytes hash to an
/// entry here verified earlier in this process, so its signature is not checked again.
/// Everything else still is, on every heartbeat (`HeartbeatEndpoint.deviceForToken`): the expiry, the app in the
/// headers, the device (read from the store: revoked is refused), and the key, because the
/// worker empties the set whenever the keys the JWKS publishes change (a withdrawn key's
/// tokens are then checked again, and refused).
///
/// Only a token that verified goes in: its claims are what it says, and the issuer must be
/// this service's (`insert` is the caller's promise). Changing any byte of it changes the
/// digest (SHA-256's second-preimage resistance), so a forged token never matches.
///
/// Bounded by two generations: entries go into `current`; when it holds half the capacity it
/// becomes `previous` and the old `previous` is dropped; a hit in `previous` moves back into
/// `current`. So a token used at least once per half-capacity insertions stays, and the set
/// never holds more than `capacity` entries. A generation is a table sized for half the
/// capacity: 64 bytes a slot, slots a power of two at most three quarters full (the default
/// 96,000 fills two 65,536-slot tables: 8.4 MB a worker). Expired entries are refused on use
/// and age out with their generation. 0 keeps nothing.
struct VerifiedTokens {
    /// SHA-256 of a token's UTF-8 bytes, as four words (no heap storage per key).
    struct Digest: Hashable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(token: String) {
            let hash = SHA256.hash(token.utf8)
            words = (word(hash, 0), word(hash, 1), word(hash, 2), word(hash, 3))
        }

        static func == (a: Digest, b: Digest) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    /// What a heartbeat checks of a verified token: `exp`, `bundle_id` and `team_id` (against
    /// the app in the headers), `device_id`.
    struct Claims: Equatable {
        let expires: Int64
        let bundleID: String
        let teamID: String
        let deviceID: String
    }

    /// An entry as kept: the app as an index into `apps`, the device id (32 hex digits in every
    /// token this service issues) as its 16 bytes. 32 bytes with padding, no heap storage, so
    /// a table slot is 64 bytes with its digest.
    private struct Entry {
        let expires: Int64
        let app: UInt32
        let device: (UInt64, UInt64)
    }

    private struct App: Hashable {
        let bundleID: String
        let teamID: String
    }

    let capacity: Int
    private var current: [Digest: Entry] = [:]
    private var previous: [Digest: Entry] = [:]
    /// The apps of the tokens kept, and each one's index (only verified tokens add to them).
    private var apps: [App] = []
    private var appIndex: [App: UInt32] = [:]

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { current.count + previous.count }

    /// The claims of a token verified earlier, or `nil` (never seen, or forgotten).
    mutating func claims(for digest: Digest) -> Claims? {
        var entry = current[digest]
        if entry == nil, let old = previous.removeValue(forKey: digest) {
            add(old, for: digest)
            entry = old
        }
        guard let entry else { return nil }
        let app = apps[Int(entry.app)]
        return Claims(expires: entry.expires, bundleID: app.bundleID, teamID: app.teamID,
                      deviceID: Hex.encode(bigEndianBytes(entry.device.0) + bigEndianBytes(entry.device.1)))
    }

    /// Records a token whose signature verified with a key the JWKS publishes. A device id
    /// that is not 32 lowercase hex digits (no token of ours) is not kept.
    mutating func insert(_ claims: Claims, for digest: Digest) {
        guard capacity > 0, let bytes = Hex.decode(claims.deviceID), bytes.count == 16,
              Hex.encode(bytes) == claims.deviceID else {
            return
        }
        let app = App(bundleID: claims.bundleID, teamID: claims.teamID)
        let index = appIndex[app] ?? {
            apps.append(app)
            appIndex[app] = UInt32(apps.count - 1)
            return UInt32(apps.count - 1)
        }()
        add(Entry(expires: claims.expires, app: index, device: (word(bytes, 0), word(bytes, 1))), for: digest)
    }

    private mutating func add(_ entry: Entry, for digest: Digest) {
        let generation = max(1, capacity / 2)
        if current.count >= generation {
            previous = capacity > 1 ? current : [:]
            current = Dictionary(minimumCapacity: generation)
        }
        current[digest] = entry
    }

    /// Forgets every token (the published keys changed).
    mutating func removeAll() {
        current = [:]
        previous = [:]
        apps = []
        appIndex = [:]
    }
}

/// The `i`-th big-endian 64-bit word of `bytes`.
func word(_ bytes: [UInt8], _ i: Int) -> UInt64 {
    bytes[(i * 8)..<(i * 8 + 8)].reduce(0) { $0 << 8 | UInt64($1) }
}

/// `value` as 8 big-endian bytes (the inverse of `word`).
func bigEndianBytes(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
}
