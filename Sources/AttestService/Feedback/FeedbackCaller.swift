import AttestCore
import AttestStore
import FastCGI

/// Who calls a feature-request or ticket endpoint, decided by `FlagsAuth` (token + app headers,
/// or an API key; 401/403 as for flags), and what that grants:
///
/// ```
/// credential   author (FeedbackAuthor)                          subject (tickets)
/// token        .device(lineage): every key of the device alike  .subject(org, device.subjectID) when the
///                                                               org's policy is signed or operator
/// API key      .apiKey(keyID, X-Device-ID or "")                none
/// ```
/// The client's own ids (`submitterId`, `voterId`, `authorId`) are stored beside the author and
/// grant nothing. An organization with feedback off (`attestctl org set --feedback off`) is
/// 403 `feedback_not_available` once the caller is authenticated.
struct FeedbackCaller {
    let app: AppContext
    let author: FeedbackAuthor
    /// The caller's verified subject entry, if any (never from a subject the device asserted).
    let subject: FeedbackAuthor?

    var appID: String { app.app.appID }

    /// `FlagsAuth.caller`, then the organization's switch: 401, 403, then 403
    /// `feedback_not_available`, before the body is looked at.
    static func authenticate(_ request: Request, now: Timestamp, _ ctx: ServiceContext) throws -> FlagsAuth.Caller {
        let caller = try FlagsAuth.caller(request, now: now, ctx)
        try requireEnabled(caller.app.org)
        return caller
    }

    static func requireEnabled(_ org: OrgRecord) throws {
        guard org.feedbackEnabled else {
            throw ServiceError(.feedbackNotAvailable, "Feature requests and support tickets are not available "
                                                      + "for this app.",
                               log: "organization \(org.name) has feedback off")
        }
    }

    static func resolve(_ caller: FlagsAuth.Caller, in txn: Transaction) throws -> FeedbackCaller {
        let author: FeedbackAuthor, subject: FeedbackAuthor?
        switch caller.credential {
        case .token(let claims):
            let (device, _) = try FlagsAuth.standing(claims, app: caller.app.app, in: txn)
            author = .device(LineageKey.of(device))
            subject = Self.verifiedSubject(device.subjectID, org: caller.app.org)
        case .apiKey(let id, let sdkDeviceID):
            author = .apiKey(keyID: id, clientID: sdkDeviceID ?? "")
            subject = nil
        }
        try requireEnabled(caller.app.org)
        return FeedbackCaller(app: caller.app, author: author, subject: subject)
    }

    /// The subject entry a device's link grants: only under a policy where the device could not
    /// have named the subject itself (`signed`: a value the organization's backend signed;
    /// `operator`: `attestctl subject link`). Under `asserted` any device claims any subject.
    static func verifiedSubject(_ subjectID: String, org: OrgRecord) -> FeedbackAuthor? {
        guard !subjectID.isEmpty, org.subjectLinks == .signed || org.subjectLinks == .operator else { return nil }
        return .subject(org: org.name, subjectID: subjectID)
    }

    /// `device` or `api_key`, as webhooks name an author.
    var authorType: String {
        if case .device = author { return "device" }
        return "api_key"
    }
}
