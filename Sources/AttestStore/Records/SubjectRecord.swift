import AttestCore

/// A subject (docs/contract.md §6): an opaque family or household id sent by devices as `subjectId`,
/// scoped to an organization, holding the entitlements the operator granted.
///
/// Key in `subjects`: org ‖ 0x00 ‖ subjectID (UTF-8; organization names hold no NUL, so the
/// first 0x00 ends the org). Written at the first link or grant; deleted when its last device
/// leaves it (moved or unlinked) or its last entitlement is revoked, whichever comes second
/// (`Transaction.dropSubjectIfUnused`). Layout v1:
/// ```
/// u8 1 | subjectID string | createdAt i64
///      | entitlements u16 n | n × (name string, grantedAt i64, until i64 (0 = no end))
/// ```
public struct SubjectRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "subject"

    public struct Entitlement: Sendable, Hashable {
        public var name: String
        public var grantedAt: Timestamp
        /// The first second it no longer applies; `nil` = until revoked.
        public var until: Timestamp?
        public init(name: String, grantedAt: Timestamp, until: Timestamp?) {
            self.name = name
            self.grantedAt = grantedAt
            self.until = until
        }

        public func isActive(at now: Timestamp) -> Bool { until.map { now < $0 } ?? true }
    }

    public var subjectID: String
    public var createdAt: Timestamp
    public var entitlements: [Entitlement]

    public init(subjectID: String, createdAt: Timestamp, entitlements: [Entitlement] = []) {
        self.subjectID = subjectID
        self.createdAt = createdAt
        self.entitlements = entitlements
    }

    /// The entitlements in force at `now`, in grant order.
    public func active(at now: Timestamp) -> [Entitlement] { entitlements.filter { $0.isActive(at: now) } }

    public func encode(into w: inout BinaryWriter) {
        w.string(subjectID)
        w.i64(createdAt.seconds)
        w.u16(UInt16(entitlements.count))
        for e in entitlements {
            w.string(e.name)
            w.i64(e.grantedAt.seconds)
            w.i64(e.until?.seconds ?? 0)
        }
    }

    public init(from r: inout BinaryReader) throws {
        subjectID = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        entitlements = []
        for _ in 0..<Int(try r.u16()) {
            let name = try r.string()
            let granted = Timestamp(seconds: try r.i64())
            let until = try r.i64()
            entitlements.append(Entitlement(name: name, grantedAt: granted,
                                            until: until == 0 ? nil : Timestamp(seconds: until)))
        }
    }
}
