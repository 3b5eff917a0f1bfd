import AttestCore
import AttestStore

/// Entitlements of subjects (`attestctl subject grant|revoke`), per organization.
///
/// A grant names an entitlement (`premium`, `family_plan`: 1–64 of `A-Za-z0-9._:-`) and an
/// optional end; granting one already held replaces its end. Linked devices carry the
/// entitlements in force in their next token's `subscription` claim; one past its end drops
/// out by itself.
public enum SubjectGrants {
    public static let nameBytes = 64

    static func checkName(_ name: String) throws(ServiceError) {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-".utf8)
        guard !name.isEmpty, name.utf8.count <= nameBytes, name.utf8.allSatisfy(allowed.contains) else {
            throw ServiceError(.badRequest,
                               "an entitlement is 1 to \(nameBytes) of A-Z a-z 0-9 . _ : -, got \"\(name)\"")
        }
    }

    /// Grants `entitlement` to the subject (created if new) until `until` (`nil`: until revoked).
    /// - Throws: `bad_request` for a bad name, a subject id over 128 bytes or an end in the past.
    public static func grant(org: String, subjectID: String, entitlement: String, until: Timestamp?, store: Store,
                             now: Timestamp) throws -> SubjectRecord {
        try checkName(entitlement)
        guard !subjectID.isEmpty, subjectID.utf8.count <= FieldLimits.identifierBytes else {
            throw ServiceError(.badRequest, "a subject id is 1 to \(FieldLimits.identifierBytes) bytes")
        }
        if let until, until <= now { throw ServiceError(.badRequest, "--until \(until.iso8601) is not in the future") }
        return try store.write([.durable]) { txn in
            var subject = try txn.subject(org: org, subjectID: subjectID)
                ?? SubjectRecord(subjectID: subjectID, createdAt: now)
            subject.entitlements.removeAll { $0.name == entitlement }
            subject.entitlements.append(.init(name: entitlement, grantedAt: now, until: until))
            try txn.put(subject, org: org)
            return subject
        }
    }

    /// Removes `entitlement` from the subject; a subject left with no entitlement and no linked
    /// device is deleted (`Transaction.dropSubjectIfUnused`).
    /// - Throws: `not_found` when the subject does not hold it.
    public static func revoke(org: String, subjectID: String, entitlement: String,
                              store: Store) throws -> SubjectRecord {
        try store.write([.durable]) { txn in
            guard var subject = try txn.subject(org: org, subjectID: subjectID),
                  subject.entitlements.contains(where: { $0.name == entitlement }) else {
                throw ServiceError(.notFound, "subject \(subjectID) does not hold \(entitlement)")
            }
            subject.entitlements.removeAll { $0.name == entitlement }
            try txn.put(subject, org: org)
            _ = try txn.dropSubjectIfUnused(org: org, subjectID: subjectID)
            return subject
        }
    }
}
