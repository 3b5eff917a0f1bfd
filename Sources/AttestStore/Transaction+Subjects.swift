import AttestCore

/// Subjects and the devices linked to them, per organization.
///
/// ```
/// subjects         org ‖ 0x00 ‖ subjectID                              → SubjectRecord
/// subject_devices  SHA-256(org ‖ 0x00 ‖ subjectID)[0..<16] ‖ keyID (32) → u8 how
/// ```
/// `how` says how the link was made (`SubjectLinkOrigin`): 2 verified (a signed value that
/// verified under the organization's secret, or the operator's `attestctl subject link`), 3
/// asserted (a plain value the device sent under policy `asserted`), 1 made before this was
/// kept (unknown). Only a verified link may grant what a subject owns beyond its entitlements
/// (its support tickets, `FeedbackCaller`): a policy change keeps the links already made.
/// The link itself is the device's `subjectID`; `subject_devices` is its index, kept in the
/// same transaction as every change of it (`link`). A subject's record exists while a device
/// is linked to it or it holds an entitlement, and no longer (`store check` verifies the first).
extension Transaction {
    static func subjectKey(org: String, subjectID: String) -> [UInt8] { Array(org.utf8) + [0] + Array(subjectID.utf8) }

    static func subjectDigest(org: String, subjectID: String) -> [UInt8] {
        Array(SHA256.hash(subjectKey(org: org, subjectID: subjectID)).prefix(16))
    }

    public func subject(org: String, subjectID: String) throws -> SubjectRecord? {
        try get(.subjects, Self.subjectKey(org: org, subjectID: subjectID)).map { try SubjectRecord(encoded: $0) }
    }

    public func prefetchSubject(org: String, subjectID: String) {
        prefetch(.subjects, Self.subjectKey(org: org, subjectID: subjectID))
    }

    public func put(_ subject: SubjectRecord, org: String) throws {
        try put(.subjects, Self.subjectKey(org: org, subjectID: subject.subjectID), subject.encoded())
    }

    /// The organization's subjects in subjectID byte order.
    public func subjects(org: String) throws -> [SubjectRecord] {
        let prefix = Array(org.utf8) + [0]
        var found = [SubjectRecord]()
        try scan(.subjects, from: prefix) { k, v in
            guard k.starts(with: prefix) else { return false }
            found.append(try SubjectRecord(encoded: v))
            return true
        }
        return found
    }

    /// Moves `device`'s subject link to `subjectID` ("" = no link), updating the index with how
    /// it was made (`verified`), creating the subject's record at its first link and deleting
    /// the one it leaves when nothing holds that any more (`dropSubjectIfUnused`). The caller
    /// stores the device.
    public func link(_ device: inout DeviceRecord, to subjectID: String, org: String, now: Timestamp,
                     verified: Bool = false) throws {
        let left = device.subjectID
        if !left.isEmpty {
            try delete(.subjectDevices, Self.subjectDigest(org: org, subjectID: left) + device.keyID)
        }
        device.subjectID = subjectID
        if !subjectID.isEmpty {
            try put(.subjectDevices, Self.subjectDigest(org: org, subjectID: subjectID) + device.keyID,
                    [verified ? SubjectLinkOrigin.verified.rawValue : SubjectLinkOrigin.asserted.rawValue])
            if try subject(org: org, subjectID: subjectID) == nil {
                try put(SubjectRecord(subjectID: subjectID, createdAt: now), org: org)
            }
        }
        if !left.isEmpty && left != subjectID { _ = try dropSubjectIfUnused(org: org, subjectID: left) }
    }

    /// How the device's current subject link was made; nil when it has none.
    public func subjectLinkOrigin(_ device: DeviceRecord, org: String) throws -> SubjectLinkOrigin? {
        guard !device.subjectID.isEmpty,
              let value = try get(.subjectDevices, Self.subjectDigest(org: org, subjectID: device.subjectID)
                                                   + device.keyID), value.count == 1 else { return nil }
        return SubjectLinkOrigin(rawValue: value[0]) ?? .unknown
    }

    /// Deletes the subject's record when no device is linked to it and it holds no entitlement
    /// (not even an ended one: the operator's grants are kept until revoked): it is then only a
    /// label a device once sent, and an organization keeps no more subjects than it has linked
    /// devices plus subjects the operator granted something. `true` when it deleted it.
    public func dropSubjectIfUnused(org: String, subjectID: String) throws -> Bool {
        guard let record = try subject(org: org, subjectID: subjectID), record.entitlements.isEmpty,
              try !hasSubjectDevices(org: org, subjectID: subjectID) else { return false }
        return try delete(.subjects, Self.subjectKey(org: org, subjectID: subjectID))
    }

    /// Whether any device is linked to the subject (stops at the first).
    func hasSubjectDevices(org: String, subjectID: String) throws -> Bool {
        let prefix = Self.subjectDigest(org: org, subjectID: subjectID)
        var found = false
        try scan(.subjectDevices, from: prefix) { k, _ in
            found = k.starts(with: prefix)
            return false
        }
        return found
    }

    /// The keyIDs of the devices linked to the subject.
    public func subjectDevices(org: String, subjectID: String) throws -> [[UInt8]] {
        let prefix = Self.subjectDigest(org: org, subjectID: subjectID)
        var found = [[UInt8]]()
        try scan(.subjectDevices, from: prefix) { k, _ in
            guard k.starts(with: prefix) else { return false }
            found.append(Array(k.dropFirst(prefix.count)))
            return true
        }
        return found
    }
}

/// How a subject link was made (the `subject_devices` value).
public enum SubjectLinkOrigin: UInt8, Sendable {
    /// Made before the origin was kept.
    case unknown = 1
    /// A signed value that verified, or the operator's link.
    case verified = 2
    /// A plain value the device sent under policy `asserted`.
    case asserted = 3
}
