import AttestCore

/// What the server knows about one physical device across its App Attest keys: the keys
/// attested for one `deviceFingerprint` within an app, the operator's flags on it, and the
/// assertion failures of the last 24 hours (risk signals, see the risk table in docs/tokens.md).
///
/// Stored in `fingerprints` (see `LineageKey`). Layout v2:
/// ```
/// u8 2 | keys u32 (distinct keys ever attested) | flags u8 (bit 0 jailbroken, bit 1 blocked)
///      | history u16 n | n × (keyID bytes, attestedAt i64)      the latest `historyLimit`, oldest first
///      | failures u16 n | n × (at i64, kind u8 (0 failed, 1 forged))   within `failureWindow`, at most `failureLimit`
/// ```
/// v1 (`u8 1 | keys u32 | latest keyID bytes`) reads as a history of its latest key with an
/// unknown date (0), no flags and no failures.
public struct LineageRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 2
    public static let recordName = "fingerprint"
    /// Attestations kept in `history` (older ones still count in `keys`).
    public static let historyLimit = 32
    /// Failures are kept for 24 hours, at most this many.
    public static let failureLimit = 64
    public static let failureWindow: Int64 = 86_400

    public struct Attestation: Sendable, Hashable {
        public var keyID: [UInt8]
        /// 0 when unknown (attested before history was kept).
        public var attestedAt: Timestamp
        public init(keyID: [UInt8], attestedAt: Timestamp) {
            self.keyID = keyID
            self.attestedAt = attestedAt
        }
    }

    public enum FailureKind: UInt8, Sendable, CaseIterable {
        /// Signed by the device's key but refused (a replayed counter, another app): the key was invalidated.
        case failed = 0
        /// Not signed by the device's key (someone who knows only the keyId): nothing of the device changed.
        case forged = 1
    }

    public struct Failure: Sendable, Hashable {
        public var at: Timestamp
        public var kind: FailureKind
    }

    public var keys: UInt32
    public var flags: DeviceRecord.OperatorFlags
    public var history: [Attestation]
    public var failures: [Failure]

    public init(keys: UInt32 = 0, flags: DeviceRecord.OperatorFlags = [], history: [Attestation] = [],
                failures: [Failure] = []) {
        self.keys = keys
        self.flags = flags
        self.history = history
        self.failures = failures
    }

    /// Records an attestation of `keyID`; the same key twice in a row counts once.
    public mutating func noteAttestation(_ keyID: [UInt8], at: Timestamp) {
        if history.last?.keyID == keyID { return }
        keys &+= 1
        history.append(Attestation(keyID: keyID, attestedAt: at))
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
    }

    /// Records an assertion failure, dropping those older than the window. Over the limit the
    /// oldest forged one goes first (anyone who knows a keyId can send forged assertions: they
    /// must not push out the device's own failed ones, worth more risk points), else the oldest.
    public mutating func noteFailure(_ kind: FailureKind, at: Timestamp) {
        failures.removeAll { $0.at.seconds <= at.seconds - Self.failureWindow }
        failures.append(Failure(at: at, kind: kind))
        if failures.count > Self.failureLimit { failures.remove(at: failures.firstIndex { $0.kind == .forged } ?? 0) }
    }

    /// Failures of `kind` in the 24 hours before `now`.
    public func failures(_ kind: FailureKind, now: Timestamp) -> Int {
        failures.count { $0.kind == kind && $0.at.seconds > now.seconds - Self.failureWindow && $0.at <= now }
    }

    /// Keys attested in the `seconds` before `now` (dates as recorded).
    public func attestations(within seconds: Int64, now: Timestamp) -> Int {
        history.count { $0.attestedAt.seconds > now.seconds - seconds && $0.attestedAt <= now }
    }

    /// The latest attestation's date, if known.
    public var lastAttestedAt: Timestamp? {
        history.last.flatMap { $0.attestedAt.seconds > 0 ? $0.attestedAt : nil }
    }

    public func encode(into w: inout BinaryWriter) {
        w.u32(keys)
        w.u8(flags.rawValue)
        w.u16(UInt16(history.count))
        for a in history {
            w.data(a.keyID)
            w.i64(a.attestedAt.seconds)
        }
        w.u16(UInt16(failures.count))
        for f in failures {
            w.i64(f.at.seconds)
            w.u8(f.kind.rawValue)
        }
    }

    public init(from r: inout BinaryReader) throws {
        keys = try r.u32()
        if r.version == 1 {
            flags = []
            history = [Attestation(keyID: try r.data(), attestedAt: Timestamp(seconds: 0))]
            failures = []
            return
        }
        flags = DeviceRecord.OperatorFlags(rawValue: try r.u8())
        history = []
        for _ in 0..<Int(try r.u16()) {
            history.append(Attestation(keyID: try r.data(), attestedAt: Timestamp(seconds: try r.i64())))
        }
        failures = []
        for _ in 0..<Int(try r.u16()) {
            let at = Timestamp(seconds: try r.i64())
            let k = try r.u8()
            guard let kind = FailureKind(rawValue: k) else { throw StoreError(.corrupt, "failure kind \(k)") }
            failures.append(Failure(at: at, kind: kind))
        }
    }
}

/// Where a device's `LineageRecord` lives in `fingerprints`:
/// ```
/// appID ‖ 0x00 ‖ deviceFingerprint (UTF-8)   a device that sent a fingerprint: shared by all its keys
/// appID ‖ 0x01 ‖ keyID (32 bytes)            a device without one: its own key only
/// ```
/// App IDs are `[A-Z0-9]{10}.[A-Za-z0-9.-]+`, so the byte after them tells the two apart, and
/// one tenant's client-supplied fingerprints never meet another's.
public struct LineageKey: Hashable, Sendable {
    public let bytes: [UInt8]

    public static func fingerprint(_ fingerprint: String, appID: String) -> LineageKey {
        LineageKey(bytes: Array(appID.utf8) + [0] + Array(fingerprint.utf8))
    }

    public static func of(_ device: DeviceRecord) -> LineageKey {
        of(keyID: device.keyID, appID: device.appID, fingerprint: device.fingerprint)
    }

    /// The lineage of a device with these members (before its record exists: validate).
    public static func of(keyID: [UInt8], appID: String, fingerprint: String) -> LineageKey {
        fingerprint.isEmpty
            ? LineageKey(bytes: Array(appID.utf8) + [1] + keyID) : .fingerprint(fingerprint, appID: appID)
    }

    /// 16 bytes of SHA-256 over the key: a fixed-width prefix for `flag_log` and `notes_seen` entries.
    public var digest: [UInt8] { Array(SHA256.hash(bytes).prefix(16)) }
}
