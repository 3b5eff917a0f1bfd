import AttestCore
import AttestStore

/// The webhook events of device writes (docs/webhooks.md lists their `data`), queued in the
/// write's transaction like `flag.changed`. The push token and environment the SDK sent go
/// to the organization's own push system (it notifies the submitter); client ids are
/// client-claimed and say so.
enum FeedbackEvents {
    static func app(_ caller: FeedbackCaller) -> [(String, JSONValue)] {
        [("organization", .string(caller.app.org.name)), ("app_id", .string(caller.appID)),
         ("team_id", .string(caller.app.app.teamID)), ("bundle_id", .string(caller.app.app.bundleID))]
    }

    static func optional(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }

    static func requestCreated(_ r: FeatureRequestRecord, _ caller: FeedbackCaller) -> [(String, JSONValue)] {
        app(caller) + [("feature_request_id", FeedbackWire.id(r.id)), ("title", .string(r.title)),
                       ("status", .string(r.status.name)), ("author_type", .string(caller.authorType)),
                       ("submitter_id", .string(r.submitterID)), ("push_token", optional(r.pushToken)),
                       ("push_environment", optional(r.pushEnvironment))]
    }

    static func commented(_ c: FeedbackCommentRecord, requestID: [UInt8],
                          _ caller: FeedbackCaller) -> [(String, JSONValue)] {
        app(caller) + [("feature_request_id", FeedbackWire.id(requestID)), ("comment_id", FeedbackWire.id(c.id)),
                       ("author_type", .string(caller.authorType)), ("author_id", .string(c.authorID)),
                       ("push_token", optional(c.pushToken)), ("push_environment", optional(c.pushEnvironment))]
    }

    static func ticketCreated(_ t: TicketRecord, _ caller: FeedbackCaller) -> [(String, JSONValue)] {
        app(caller) + [("ticket_id", FeedbackWire.id(t.id)), ("subject", .string(t.subject)),
                       ("status", .string(t.status.name)), ("priority", .string(t.priority.name)),
                       ("author_type", .string(caller.authorType)), ("submitter_id", .string(t.submitterID)),
                       ("submitter_email", optional(t.submitterEmail)), ("push_token", optional(t.pushToken)),
                       ("push_environment", optional(t.pushEnvironment))]
    }

    static func ticketMessage(_ m: TicketMessageRecord, ticketID: [UInt8],
                              _ caller: FeedbackCaller) -> [(String, JSONValue)] {
        app(caller) + [("ticket_id", FeedbackWire.id(ticketID)), ("message_id", FeedbackWire.id(m.id)),
                       ("author_type", .string(caller.authorType)), ("author_id", .string(m.authorID))]
    }
}
