import AttestCore
import AttestStore
import FastCGI

/// Who calls a feature-request or ticket endpoint, decided by `FlagsAuth` (token + app headers,
/// or an API key; 401/403 as for flags), and what that grants:
///
/// ```
/// credential   author (FeedbackAuthor)                          subject (tickets)
/// token        .device(lineage): every key of the device alike  .subject(org, device.subjectID) when the
///                                                               link was verified (`SubjectLinkOrigin`)
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
    /// The API key's id for an API-key caller: its writes are also charged to the key as a
    /// whole (`FeedbackRates`), since its author takes the client-claimed `X-Device-ID`.
    var apiKeyID: String? = nil

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
        var keyID: String?
        switch caller.credential {
        case .token(let claims):
            let (device, _) = try FlagsAuth.standing(claims, app: caller.app.app, in: txn)
            author = .device(LineageKey.of(device))
            subject = try txn.subjectLinkOrigin(device, org: caller.app.org.name) == .verified
                ? .subject(org: caller.app.org.name, subjectID: device.subjectID) : nil
        case .apiKey(let id, let sdkDeviceID):
            author = .apiKey(keyID: id, clientID: sdkDeviceID ?? "")
            subject = nil
            keyID = id
        }
        try requireEnabled(caller.app.org)
        return FeedbackCaller(app: caller.app, author: author, subject: subject, apiKeyID: keyID)
    }

    /// `device` or `api_key`, as webhooks name an author.
    var authorType: String {
        if case .device = author { return "device" }
        return "api_key"
    }
}
