import AttestCore
import AttestStore
import FastCGI

/// The answers of the feature-request and ticket calls, as the SDK decodes them (its
/// `FeatureRequest`, `FeatureVote`, `FeatureComment`, `SupportTicket`, `TicketMessage` with a
/// default `JSONDecoder` and `.iso8601` dates): camelCase members, UUIDs upper-case, dates
/// `yyyy-MM-ddTHH:mm:ssZ` (no fractional seconds), enums by their SDK names.
///
/// ```
/// FeatureRequest  {"id","title","description","status","voteCount","hasVoted","commentCount",
///                  "createdAt","updatedAt"}
/// list            {"items":[FeatureRequest…],"metadata":{"page","per","total"}}
/// vote            {"id","featureRequestId","createdAt"}
/// comment         {"id","featureRequestId","authorType":"user"|"admin","body","createdAt"}
/// ticket          {"id","subject","status","priority","messageCount","createdAt","updatedAt"}
/// ticket detail   {"id","subject","status","priority","messages":[message…],"createdAt","updatedAt"}
/// message         {"id","ticketId","authorType","body","createdAt"}
/// ```
/// Every answer has `Cache-Control: no-store`.
enum FeedbackWire {
    static func id(_ bytes: [UInt8]) -> JSONValue { .string(ReleaseNotes.idText(bytes)) }
    static func date(_ t: Timestamp) -> JSONValue { .string(t.iso8601) }

    static func request(_ r: FeatureRequestRecord, hasVoted: Bool) -> JSONValue {
        .object([("id", id(r.id)), ("title", .string(r.title)), ("description", .string(r.description)),
                 ("status", .string(r.status.name)), ("voteCount", .int(Int64(r.voteCount))),
                 ("hasVoted", .bool(hasVoted)), ("commentCount", .int(Int64(r.commentCount))),
                 ("createdAt", date(r.createdAt)), ("updatedAt", date(r.updatedAt))])
    }

    static func list(_ items: [JSONValue], page: Int, per: Int, total: Int) -> JSONValue {
        .object([("items", .array(items)),
                 ("metadata", .object([("page", .int(Int64(page))), ("per", .int(Int64(per))),
                                       ("total", .int(Int64(total)))]))])
    }

    static func vote(_ v: FeatureVoteRecord, requestID: [UInt8]) -> JSONValue {
        .object([("id", id(v.voteID)), ("featureRequestId", id(requestID)), ("createdAt", date(v.createdAt))])
    }

    static func comment(_ c: FeedbackCommentRecord, requestID: [UInt8]) -> JSONValue {
        .object([("id", id(c.id)), ("featureRequestId", id(requestID)), ("authorType", .string(c.authorType.name)),
                 ("body", .string(c.body)), ("createdAt", date(c.createdAt))])
    }

    static func ticket(_ t: TicketRecord) -> JSONValue {
        .object([("id", id(t.id)), ("subject", .string(t.subject)), ("status", .string(t.status.name)),
                 ("priority", .string(t.priority.name)), ("messageCount", .int(Int64(t.messageCount))),
                 ("createdAt", date(t.createdAt)), ("updatedAt", date(t.updatedAt))])
    }

    static func ticket(_ t: TicketRecord, messages: [TicketMessageRecord]) -> JSONValue {
        .object([("id", id(t.id)), ("subject", .string(t.subject)), ("status", .string(t.status.name)),
                 ("priority", .string(t.priority.name)),
                 ("messages", .array(messages.map { message($0, ticketID: t.id) })),
                 ("createdAt", date(t.createdAt)), ("updatedAt", date(t.updatedAt))])
    }

    static func message(_ m: TicketMessageRecord, ticketID: [UInt8]) -> JSONValue {
        .object([("id", id(m.id)), ("ticketId", id(ticketID)), ("authorType", .string(m.authorType.name)),
                 ("body", .string(m.body)), ("createdAt", date(m.createdAt))])
    }

    static func answer(_ value: JSONValue, status: Int = 200) -> Response {
        Response(status: status, headers: [Header("Content-Type", "application/json"),
                                           Header("Cache-Control", "no-store")], body: value.jsonBytes)
    }

    /// 204 with no body (a vote removed).
    static func noContent() -> Response {
        Response(status: 204, headers: [Header("Cache-Control", "no-store")], body: [])
    }
}
