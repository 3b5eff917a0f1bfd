import AttestCore
import AttestStore
import FastCGI

/// Support tickets as the SDK calls them (docs/feedback.md):
///
/// ```
/// POST /api/v1/support/tickets {subject, body, submitterId, submitterEmail?, deviceHash}
///                                                   ← 201 {"id","subject","status","priority","messageCount",
///                                                          "createdAt","updatedAt"}
/// GET  /api/v1/support/tickets[?submitter_id=]     ← 200 [ticket…] newest first
/// GET  /api/v1/support/tickets/<id>                ← 200 ticket with "messages":[…] oldest first
/// POST /api/v1/support/tickets/<id>/messages {authorId, body}  ← 201 {"id","ticketId","authorType",
///                                                                     "body","createdAt"}
/// ```
/// A ticket is readable and replyable by the device (lineage) that opened it, and by devices
/// verifiably linked to the subject its opener was linked to when opening it
/// (`FeedbackCaller.subject`: a link that was verified, `SubjectLinkOrigin`). Anyone else gets 404 (never
/// 403: a ticket's existence is not disclosed), and an empty list. `submitter_id` only filters
/// the caller's own list. A reply on a ticket `awaiting_reply` sets it `open` again.
enum TicketsEndpoint {
    static let path = "/api/v1/support/tickets"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        guard let target = FeedbackPath(request.path, base: path) else {
            throw FeedbackPath.notFound("ticket", request.path)
        }
        switch (target.id, target.leaf) {
        case (nil, _):
            try FeedbackPath.method(request, ["GET", "POST"])
            return request.method == "GET" ? try list(request, ctx) : try create(request, ctx)
        case (let id?, nil):
            try FeedbackPath.method(request, ["GET"])
            return try show(id, request, ctx)
        case (let id?, "messages"?):
            try FeedbackPath.method(request, ["POST"])
            return try reply(id, request, ctx)
        default:
            throw FeedbackPath.notFound("ticket", request.path)
        }
    }

    static func create(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        let auth = try FeedbackCaller.authenticate(request, now: now, ctx)
        let body = try JSONBody(request)
        let subject = try FeedbackInput.text(body, .subject)
        let text = try FeedbackInput.text(body, .ticketBody)
        let submitter = try FeedbackInput.clientID(body, "submitterId")
        let deviceHash = try FeedbackInput.clientID(body, "deviceHash")
        let email = try FeedbackInput.email(body)
        let push = try FeedbackInput.push(body)
        let caller = try ctx.store.read { try FeedbackCaller.resolve(auth, in: $0) }
        try FeedbackRates.charge(.ticket, caller: caller, now: now, ctx)
        let ticket = try ctx.store.write([.durable]) { txn -> TicketRecord in
            let t = TicketRecord(id: FeedbackPath.newID(ctx), subject: subject, createdAt: now, updatedAt: now,
                                 messageCount: 1, author: caller.author, submitterID: submitter,
                                 submitterEmail: email, deviceHash: deviceHash.isEmpty ? nil : deviceHash,
                                 pushToken: push.token, pushEnvironment: push.environment)
            let first = TicketMessageRecord(id: FeedbackPath.newID(ctx), createdAt: now, authorType: .user,
                                            author: caller.author, authorID: submitter, body: text)
            try FeedbackUsage.add(FeedbackUsageRecord(tickets: 1, messages: 1,
                                                      bytes: t.countedBytes + first.countedBytes), caller, in: txn)
            try txn.put(t, appID: caller.appID)
            try txn.put(first, ticketID: t.id)
            if let subject = caller.subject { try txn.listTicket(t.id, appID: caller.appID, under: subject) }
            try ctx.queueEvent(.ticketCreated, org: caller.app.org.name, in: txn, now: now,
                               data: FeedbackEvents.ticketCreated(t, caller))
            return t
        }
        return FeedbackWire.answer(FeedbackWire.ticket(ticket), status: 201)
    }

    static func list(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let auth = try FeedbackCaller.authenticate(request, now: ctx.clock.now(), ctx)
        // The SDK's URLComponents leaves a + in a user id as it is ("ann+test@example.com").
        let submitter = try FlagsAdminEndpoint.query(request, "submitter_id", plusIsLiteral: true)
        let tickets = try ctx.store.read { txn -> [TicketRecord] in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            var found = try txn.tickets(appID: caller.appID, author: caller.author)
            if let subject = caller.subject {
                for t in try txn.tickets(appID: caller.appID, author: subject) where !found.contains(where: { $0.id == t.id }) {
                    found.append(t)
                }
            }
            return found
        }
        let kept = tickets.filter { submitter == nil || $0.submitterID == submitter }.newestFirst()
        return FeedbackWire.answer(.array(kept.map(FeedbackWire.ticket)))
    }

    static func show(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let auth = try FeedbackCaller.authenticate(request, now: ctx.clock.now(), ctx)
        return FeedbackWire.answer(try ctx.store.read { txn in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            let t = try readable(id, caller, in: txn)
            return FeedbackWire.ticket(t, messages: try txn.messages(ticketID: id))
        })
    }

    static func reply(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        let auth = try FeedbackCaller.authenticate(request, now: now, ctx)
        let body = try JSONBody(request)
        let text = try FeedbackInput.text(body, .ticketBody)
        let authorID = try FeedbackInput.clientID(body, "authorId")
        let caller = try ctx.store.read { txn -> FeedbackCaller in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            _ = try readable(id, caller, in: txn)
            return caller
        }
        try FeedbackRates.charge(.message, caller: caller, now: now, ctx)
        let message = try ctx.store.write([.durable]) { txn -> TicketMessageRecord in
            var t = try readable(id, caller, in: txn)
            let last = try txn.lastTimedID(.ticketMessages, parent: id, at: now)
            let m = TicketMessageRecord(id: FeedbackPath.newID(after: last, ctx), createdAt: now, authorType: .user,
                                        author: caller.author, authorID: authorID, body: text)
            try FeedbackUsage.add(FeedbackUsageRecord(messages: 1, bytes: m.countedBytes), caller, in: txn)
            try txn.put(m, ticketID: id)
            t.messageCount &+= 1
            t.updatedAt = now
            if t.status == .awaitingReply { t.status = .open }
            try txn.put(t, appID: caller.appID)
            try ctx.queueEvent(.ticketMessage, org: caller.app.org.name, in: txn, now: now,
                               data: FeedbackEvents.ticketMessage(m, ticketID: id, caller))
            return m
        }
        return FeedbackWire.answer(FeedbackWire.message(message, ticketID: id), status: 201)
    }

    /// The app's ticket `id` when the caller may read it, else 404 (whether or not it exists).
    static func readable(_ id: [UInt8], _ caller: FeedbackCaller, in txn: Transaction) throws -> TicketRecord {
        if let t = try txn.ticket(appID: caller.appID, id: id) {
            if t.author == caller.author { return t }
            if let subject = caller.subject, try txn.ticketListed(id, appID: caller.appID, under: subject) { return t }
        }
        throw ServiceError(.notFound, "No such ticket.", log: "ticket \(ReleaseNotes.idText(id)) not readable")
    }
}
