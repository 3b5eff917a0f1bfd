import AttestCore
import AttestStore

/// Feature requests and tickets as the org API and `attestctl feedback|tickets --json` show
/// them to the app's team: snake_case, UUIDs upper-case, dates `yyyy-MM-ddTHH:mm:ssZ`, and the
/// client-claimed ids and email the device never sees.
///
/// ```
/// request  {id, title, description, status, vote_count, comment_count, merged_into (or null),
///           submitter_id, author_type: device|api_key, created_at, updated_at}
///          show adds "comments": [comment…] oldest first
/// comment  {id, feature_request_id, author_type: user|admin, author_id, body, created_at}
/// ticket   {id, subject, status, priority, message_count, submitter_id, submitter_email (or null),
///           author_type, created_at, updated_at}
///          show adds "messages": [message…] oldest first
/// message  {id, ticket_id, author_type: user|admin, author_id, body, created_at}
/// ```
public enum FeedbackAdminWire {
    static func id(_ bytes: [UInt8]) -> JSONValue { .string(ReleaseNotes.idText(bytes)) }
    static func date(_ t: Timestamp) -> JSONValue { .string(t.iso8601) }

    /// `device`, `api_key` or `admin`: who wrote a record.
    static func kind(_ author: FeedbackAuthor) -> JSONValue {
        switch author {
        case .device: return "device"
        case .apiKey: return "api_key"
        case .admin: return "admin"
        case .subject: return "subject"
        }
    }

    public static func request(_ r: FeatureRequestRecord, comments: [FeedbackCommentRecord]? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", id(r.id)), ("title", .string(r.title)), ("description", .string(r.description)),
            ("status", .string(r.status.name)), ("vote_count", .int(Int64(r.voteCount))),
            ("comment_count", .int(Int64(r.commentCount))), ("merged_into", r.mergedInto.map(id) ?? .null),
            ("submitter_id", .string(r.submitterID)), ("author_type", kind(r.author)),
            ("created_at", date(r.createdAt)), ("updated_at", date(r.updatedAt)),
        ]
        if let comments { members.append(("comments", .array(comments.map { comment($0, requestID: r.id) }))) }
        return .object(members)
    }

    public static func comment(_ c: FeedbackCommentRecord, requestID: [UInt8]) -> JSONValue {
        .object([("id", id(c.id)), ("feature_request_id", id(requestID)), ("author_type", .string(c.authorType.name)),
                 ("author_id", .string(c.authorID)), ("body", .string(c.body)), ("created_at", date(c.createdAt))])
    }

    public static func ticket(_ t: TicketRecord, messages: [TicketMessageRecord]? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", id(t.id)), ("subject", .string(t.subject)), ("status", .string(t.status.name)),
            ("priority", .string(t.priority.name)), ("message_count", .int(Int64(t.messageCount))),
            ("submitter_id", .string(t.submitterID)),
            ("submitter_email", t.submitterEmail.map { .string($0) } ?? .null), ("author_type", kind(t.author)),
            ("created_at", date(t.createdAt)), ("updated_at", date(t.updatedAt)),
        ]
        if let messages { members.append(("messages", .array(messages.map { message($0, ticketID: t.id) }))) }
        return .object(members)
    }

    public static func message(_ m: TicketMessageRecord, ticketID: [UInt8]) -> JSONValue {
        .object([("id", id(m.id)), ("ticket_id", id(ticketID)), ("author_type", .string(m.authorType.name)),
                 ("author_id", .string(m.authorID)), ("body", .string(m.body)), ("created_at", date(m.createdAt))])
    }
}
