import AttestCore
import AttestStore
import FastCGI

/// The org API for moderating feature requests and support tickets (docs/feedback.md,
/// "Moderation"), served by the feedback pool: `Authorization: Bearer aat_…` of scope `all`
/// (401 without a valid key, 403 for a `heartbeat` key); `app_id` in the query names one of the
/// key's organization's apps (another organization's app is 404, as one that does not exist).
/// Every write goes through `FeedbackModeration` (the CLI's checks, counters and webhooks).
///
/// ```
/// GET   /api/v1/org/feedback?app_id=[&status=]                ← {"feature_requests": [request…]} newest first
/// GET   /api/v1/org/feedback/:id?app_id=                      ← request with "comments"
/// PATCH /api/v1/org/feedback/:id?app_id=          → {status}  ← request
/// POST  /api/v1/org/feedback/:id/comments?app_id= → {body}    ← 201 comment (author_type admin)
/// POST  /api/v1/org/feedback/:id/merge?app_id=    → {into}    ← request (status duplicate, merged_into)
/// GET   /api/v1/org/tickets?app_id=[&status=]                 ← {"tickets": [ticket…]} newest first
/// GET   /api/v1/org/tickets/:id?app_id=                       ← ticket with "messages"
/// PATCH /api/v1/org/tickets/:id?app_id=  → {status?, priority?} ← ticket
/// POST  /api/v1/org/tickets/:id/messages?app_id= → {body}     ← 201 message (author_type admin)
/// ```
/// The shapes: `FeedbackAdminWire`. An id that is not a UUID or not of the app is 404; a
/// status or priority not in its list is 400.
enum FeedbackAdminEndpoint {
    static let feedbackPath = "/api/v1/org/feedback"
    static let ticketsPath = "/api/v1/org/tickets"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let caller = try OrgCaller.authenticate(request, OrgNeed.of(request.method, write: .edit), ctx)
        let org = caller.org.name
        let now = ctx.clock.now()
        let tickets = FlagsRoute.under(request.path, ticketsPath)
        guard let target = FeedbackPath(request.path, base: tickets ? ticketsPath : feedbackPath) else {
            throw FeedbackPath.notFound(tickets ? "ticket" : "feature request", request.path)
        }
        guard let appID = try FlagsAdminEndpoint.query(request, "app_id") else {
            throw ServiceError(.badRequest, "app_id is required in the query.")
        }
        // 404 for an app the organization does not have, before anything else is looked at.
        _ = try ctx.store.read { txn in try FeatureFlagAdmin.app(appID, org: org, in: txn) }
        // The body is read after the method is checked (405 before 400).
        var parsed: JSONBody?
        func body() throws -> JSONBody {
            if let parsed { return parsed }
            let b = try JSONBody(request)
            parsed = b
            return b
        }
        func read<T>(_ f: (FeedbackModeration, Transaction) throws -> T) throws -> T {
            try FeedbackModeration.read(store: ctx.store, appID: appID, org: org, now: now, f)
        }
        /// Makes the change and records it in the audit log, in one transaction.
        func write<T>(_ action: String, _ target: String, _ detail: String,
                      _ f: (FeedbackModeration, Transaction) throws -> T) throws -> T {
            try OrgWriteLimit.charge(org: org, now: now, ctx)
            return try FeedbackModeration.write(store: ctx.store, appID: appID, org: org, actor: .api, now: now,
                                                random: ctx.random,
                                                queueEvents: ctx.configuration.webhookQueueEvents) { m, t in
                let done = try f(m, t)
                try OrgAudit.record(caller, action: action, target: target, detail: "app \(appID): " + detail,
                                    at: now, in: t)
                return done
            }
        }
        func text(_ name: String) throws -> String {
            guard let v = try body().string(name) else {
                throw FeedbackInput.invalid(name, "The field \(name) is required.")
            }
            return v
        }
        switch (tickets, target.id, target.leaf) {
        case (false, nil, _):
            try FeedbackPath.method(request, ["GET"])
            let status = try parse(try FlagsAdminEndpoint.query(request, "status"), "status", { FeatureRequestStatus(name: $0) })
            let all = try read { m, t in try m.requests(status: status, in: t) }
            return ServiceContext.json(["feature_requests": .array(all.map { FeedbackAdminWire.request($0) })])
        case (false, let id?, nil):
            try FeedbackPath.method(request, ["GET", "PATCH"])
            if request.method == "GET" {
                return ServiceContext.json(try read { m, t in
                    FeedbackAdminWire.request(try m.request(id, in: t), comments: try t.comments(requestID: id))
                })
            }
            let status = try parse(try text("status"), "status", { FeatureRequestStatus(name: $0) })!
            let changed = try write("feedback.status", ReleaseNotes.idText(id), status.name) { m, t in
                try m.setStatus(id, status, in: t)
            }
            return ServiceContext.json(FeedbackAdminWire.request(changed))
        case (false, let id?, "comments"?):
            try FeedbackPath.method(request, ["POST"])
            let b = try text("body")
            let c = try write("feedback.comment", ReleaseNotes.idText(id), b) { m, t in
                try m.comment(id, body: b, in: t)
            }
            return created(FeedbackAdminWire.comment(c, requestID: id))
        case (false, let id?, "merge"?):
            try FeedbackPath.method(request, ["POST"])
            let into = try FeedbackModeration.id(try text("into"), "feature request")
            let merged = try write("feedback.merge", ReleaseNotes.idText(id), "into \(ReleaseNotes.idText(into))") { m, t in
                try m.merge(id, into: into, in: t)
            }
            return ServiceContext.json(FeedbackAdminWire.request(merged))
        case (true, nil, _):
            try FeedbackPath.method(request, ["GET"])
            let status = try parse(try FlagsAdminEndpoint.query(request, "status"), "status", { TicketStatus(name: $0) })
            let all = try read { m, t in try m.tickets(status: status, in: t) }
            return ServiceContext.json(["tickets": .array(all.map { FeedbackAdminWire.ticket($0) })])
        case (true, let id?, nil):
            try FeedbackPath.method(request, ["GET", "PATCH"])
            if request.method == "GET" {
                return ServiceContext.json(try read { m, t in
                    FeedbackAdminWire.ticket(try m.ticket(id, in: t), messages: try t.messages(ticketID: id))
                })
            }
            let status = try parse(try body().string("status"), "status", { TicketStatus(name: $0) })
            let priority = try parse(try body().string("priority"), "priority", { TicketPriority(name: $0) })
            guard status != nil || priority != nil else {
                throw FeedbackInput.invalid("status", "Give status, priority or both.")
            }
            let said = [status?.name, priority.map { "priority " + $0.name }].compactMap { $0 }
            let updated = try write("ticket.update", ReleaseNotes.idText(id), said.joined(separator: ", ")) { m, t in
                try m.setTicket(id, status: status, priority: priority, in: t)
            }
            return ServiceContext.json(FeedbackAdminWire.ticket(updated))
        case (true, let id?, "messages"?):
            try FeedbackPath.method(request, ["POST"])
            let b = try text("body")
            let message = try write("ticket.reply", ReleaseNotes.idText(id), b) { m, t in
                try m.reply(id, body: b, in: t)
            }
            return created(FeedbackAdminWire.message(message, ticketID: id))
        default:
            throw FeedbackPath.notFound(tickets ? "ticket" : "feature request", request.path)
        }
    }

    /// `text` as one of an enum's names, or 400 listing them (nil stays nil).
    static func parse<T: CaseIterable>(_ text: String?, _ field: String, _ make: (String) -> T?) throws -> T? {
        guard let text else { return nil }
        guard let value = make(text) else {
            let names = T.allCases.compactMap { name(of: $0) }
            throw FeedbackInput.invalid(field, "\(field) must be one of " + names.joined(separator: ", ") + ".")
        }
        return value
    }

    /// The wire name of a status or priority.
    static func name<T>(of value: T) -> String? {
        switch value {
        case let s as FeatureRequestStatus: return s.name
        case let s as TicketStatus: return s.name
        case let p as TicketPriority: return p.name
        default: return nil
        }
    }

    private static func created(_ value: JSONValue) -> Response {
        .json(201, value.jsonText, headers: [Header("Cache-Control", "no-store")])
    }
}
