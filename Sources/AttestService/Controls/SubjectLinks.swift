import AttestCore
import AttestStore

/// What a device's `subjectId` may do to its subject link, by its organization's policy
/// (`OrgRecord.subjectLinks`), and the operator's side of links and secrets.
///
/// | value sent | `signed` | `operator` | `asserted` |
/// |---|---|---|---|
/// | omitted, or the device's current subject | keep | keep | keep |
/// | blank (refresh) | unlink | refused | unlink |
/// | a signed value (`SignedSubject`) that verifies and is unexpired | link its subject | refused | link its subject |
/// | a signed-format value that does not verify or has expired | refused | refused | refused |
/// | anything else | refused | refused | link it as sent |
///
/// A refused value changes nothing: the request succeeds, the device keeps the link it had (a
/// new device has none, so its token has no `subscription` claim), and the request's log says
/// why without the value's MAC. Kept because the SDK may resend the value it was given at later
/// refreshes: a value that expired after linking must not unlink a paying household.
public enum SubjectLinks {
    enum Decision: Equatable {
        case keep
        /// Link (or move) to this subject; "" unlinks. `verified`: a signed value that verified
        /// (not a plain value the device named itself).
        case link(String, verified: Bool)
        /// Changes nothing; why, for the log.
        case refused(String)
    }

    /// The decision for `value` (`nil`: omitted; "": blank) on a device linked to `current`
    /// ("" none). Costs nothing when `value` is omitted, one HMAC for a signed value.
    static func decide(_ value: String?, current: String, app: AppContext, now: Timestamp) -> Decision {
        guard let value, value != current else { return .keep }
        let policy = app.org.subjectLinks
        if policy == .operator {
            return .refused("organization \(app.org.name) links subjects by operator only (policy operator): "
                            + "subjectId ignored")
        }
        if value.isEmpty { return .link("", verified: false) }
        guard let signed = SignedSubject(value) else {
            if policy == .asserted { return .link(value, verified: false) }
            return .refused("subjectId of \(value.utf8.count) bytes is not a signed value v1.SUBJECT.EXPIRY.MAC "
                            + "(policy signed)")
        }
        if signed.subject == current { return .keep }
        guard now.seconds <= signed.expiry.seconds + SignedSubject.clockSkew else {
            return .refused("signed subjectId for \(signed.subject) expired at \(signed.expiry.iso8601)")
        }
        guard let key = app.subjectKey else {
            return .refused("organization \(app.org.name) has no subject secret yet "
                            + "(attestctl org secret \(app.org.name))")
        }
        guard signed.verifies(under: key) else {
            return .refused("signed subjectId for \(signed.subject) does not verify under organization "
                            + "\(app.org.name)'s subject secret")
        }
        return .link(signed.subject, verified: true)
    }

    // The operator's side (attestctl).

    /// The organization's subject secret, made now if it has none (organizations created
    /// before link policies) or when `rotate`: values signed with the old one stop verifying
    /// (links already made stay).
    /// - Throws: `not_found` for an unknown organization.
    public static func secret(org name: String, rotate: Bool = false, store: Store,
                              random: any RandomSource) throws -> String {
        try store.write([.durable]) { txn in
            guard var org = try txn.org(named: name) else {
                throw ServiceError(.notFound, "no organization \"\(name)\"")
            }
            if org.subjectSecret.isEmpty || rotate {
                org.subjectSecret = SignedSubject.newSecret(random: random)
                try txn.put(org)
            }
            return org.subjectSecret
        }
    }

    /// A signed value for `subject`, valid for `ttl` seconds from `now`, under the
    /// organization's secret (made if it has none).
    /// - Throws: `bad_request` for a subject outside the signable alphabet or a TTL below 1 s.
    public static func sign(org: String, subject: String, ttl: Int64, store: Store, random: any RandomSource,
                            now: Timestamp) throws -> String {
        guard SignedSubject.isSignable(subject) else {
            throw ServiceError(.badRequest, "a signed subject is 1 to \(SignedSubject.subjectBytes) "
                                            + "of A-Z a-z 0-9 - _ . : @ +, got \"\(subject)\"")
        }
        guard ttl > 0 else { throw ServiceError(.badRequest, "the TTL must be at least one second") }
        return SignedSubject.mint(subject: subject, expiry: now + ttl,
                                  secret: try secret(org: org, store: store, random: random))
    }

    /// Links the device (`keyID`, of one of the organization's apps) to `subjectID`; "" unlinks.
    /// - Throws: `not_found` for a device of no app of the organization; `bad_request` for a
    ///   subject id over 128 bytes.
    public static func link(keyID: [UInt8], to subjectID: String, org: String, store: Store,
                            now: Timestamp) throws -> DeviceRecord {
        guard subjectID.utf8.count <= FieldLimits.identifierBytes else {
            throw ServiceError(.badRequest, "a subject id is 1 to \(FieldLimits.identifierBytes) bytes")
        }
        return try store.write([.durable]) { txn in
            guard var device = try txn.device(keyID: keyID), try txn.app(id: device.appID)?.org == org else {
                throw ServiceError(.notFound, "no device with that key in an app of \(org)")
            }
            if device.subjectID != subjectID {
                try txn.link(&device, to: subjectID, org: org, now: now, verified: true)
                try txn.put(device)
            }
            return device
        }
    }
}

extension AppContext {
    /// The HMAC keyed with the organization's subject secret, keyed at first use; `nil`
    /// without a secret. A new context (any org or app write) keys it afresh.
    var subjectKey: HMACSHA256? {
        if let keyed = subjectHMAC { return keyed }
        guard !org.subjectSecret.isEmpty else { return nil }
        let keyed = HMACSHA256(key: Array(org.subjectSecret.utf8))
        subjectHMAC = keyed
        return keyed
    }
}
