import AttestCore
import AttestStore

/// Every moderation write to an app's feature requests and support tickets: what `attestctl
/// feedback|tickets` and the org API (`FeedbackAdminEndpoint`) both do, with the same checks.
///
/// Each method runs inside the caller's write transaction. An admin comment or ticket message
/// is stored with `authorType` admin and author `.admin` (`authorID` "cli" or "api"), bumps the
/// parent's count and the organization's `FeedbackUsageRecord` within `FeedbackLimits` (429
/// past a bound), exactly as a device's does. Events queued in the same transaction:
/// ```
/// setStatus, merge      feedback.status_changed  {organization, app_id, team_id, bundle_id, feature_request_id,
///                                                 previous_status, status, merged_into (or null),
///                                                 push_token, push_environment (the submitter's, or null)}
/// comment               feedback.commented       (FeedbackEvents.commented, author_type "admin")
/// setTicket, reply      ticket.status_changed    {organization, app_id, team_id, bundle_id, ticket_id,
///   (when status or                               previous_status, status, previous_priority, priority,
///    priority changed)                            push_token, push_environment (the opener's, or null)}
/// reply                 ticket.message           (FeedbackEvents.ticketMessage, author_type "admin")
/// ```
/// An admin reply sets the ticket `awaiting_reply` (the device's next reply sets it `open`).
/// A change to the value already stored changes nothing and queues nothing.
public struct FeedbackModeration {
    /// Who moderates: stored as the `authorID` of admin comments and messages.
    public enum Actor: String, Sendable { case cli, api }

    public let app: AppRecord
    public let actor: Actor
    public let now: Timestamp
    public let random: any RandomSource
    /// `webhooks.queueEvents`.
    public let queueEvents: Bool

    public init(app: AppRecord, actor: Actor, now: Timestamp, random: any RandomSource, queueEvents: Bool = true) {
        self.app = app
        self.actor = actor
        self.now = now
        self.random = random
        self.queueEvents = queueEvents
    }

    /// Runs `body` with a moderator of `appID` (404 for no such app, or another organization's
    /// when `org` is given) in one durable write.
    public static func write<T>(store: Store, appID: String, org: String?, actor: Actor, now: Timestamp,
                                random: any RandomSource, queueEvents: Bool,
                                _ body: (FeedbackModeration, Transaction) throws -> T) throws -> T {
        try store.write([.durable]) { txn in
            let (app, _) = try FeatureFlagAdmin.app(appID, org: org, in: txn)
            return try body(FeedbackModeration(app: app, actor: actor, now: now, random: random,
                                               queueEvents: queueEvents), txn)
        }
    }

    /// Runs `body` with a moderator of `appID` in a read.
    public static func read<T>(store: Store, appID: String, org: String?, now: Timestamp,
                               _ body: (FeedbackModeration, Transaction) throws -> T) throws -> T {
        try store.read { txn in
            let (app, _) = try FeatureFlagAdmin.app(appID, org: org, in: txn)
            return try body(FeedbackModeration(app: app, actor: .cli, now: now, random: SystemRandom(),
                                               queueEvents: false), txn)
        }
    }

    /// A UUID in either case, or 404 naming `what` (an id that is not one reads as an unknown one).
    public static func id(_ text: String, _ what: String) throws -> [UInt8] {
        guard let id = ReleaseNotes.parseID(text) else {
            throw ServiceError(.notFound, "No such \(what): \(text.prefix(40)).")
        }
        return id
    }

    // MARK: feature requests

    /// The app's requests (of `status`, when given), newest first.
    public func requests(status: FeatureRequestStatus?, in txn: Transaction) throws -> [FeatureRequestRecord] {
        try txn.featureRequests(appID: app.appID).filter { status == nil || $0.status == status }.newestFirst()
    }

    /// The app's request `id`, or 404.
    public func request(_ id: [UInt8], in txn: Transaction) throws -> FeatureRequestRecord {
        guard let r = try txn.featureRequest(appID: app.appID, id: id) else {
            throw ServiceError(.notFound, "No feature request \(ReleaseNotes.idText(id)) in \(app.appID).")
        }
        return r
    }

    /// Sets the request's status (leaving `duplicate` forgets what it was merged into; its
    /// moved votes stay where they went).
    public func setStatus(_ id: [UInt8], _ status: FeatureRequestStatus,
                          in txn: Transaction) throws -> FeatureRequestRecord {
        var r = try request(id, in: txn)
        guard r.status != status else { return r }
        let previous = r.status
        r.status = status
        if status != .duplicate { r.mergedInto = nil }
        r.updatedAt = now
        try txn.put(r, appID: app.appID)
        try queue(.feedbackStatusChanged, statusChanged(r, previous: previous), in: txn)
        return r
    }

    /// Merges request `id` into `target`: `id` becomes `duplicate` with `mergedInto`, and each of
    /// its votes moves to `target` unless that author voted for `target` already (no author is
    /// counted twice). Comments stay. 400 for a request merged into itself or into a request
    /// merged elsewhere; 409 for one merged already.
    public func merge(_ id: [UInt8], into target: [UInt8], in txn: Transaction) throws -> FeatureRequestRecord {
        var r = try request(id, in: txn)
        var into = try request(target, in: txn)
        guard id != target else { throw ServiceError(.badRequest, "A feature request cannot be merged into itself.") }
        if let merged = r.mergedInto {
            throw ServiceError(.conflict, "Feature request \(ReleaseNotes.idText(id)) is merged into "
                                          + "\(ReleaseNotes.idText(merged)) already.")
        }
        if let merged = into.mergedInto {
            throw ServiceError(.badRequest, "Feature request \(ReleaseNotes.idText(target)) is merged into "
                                            + "\(ReleaseNotes.idText(merged)); merge into that one.")
        }
        for vote in try txn.votes(requestID: id) {
            try txn.deleteVote(requestID: id, author: vote.author)
            if try txn.putVote(vote.vote, requestID: target, author: vote.author) { into.voteCount &+= 1 }
        }
        let previous = r.status
        r.voteCount = 0
        r.status = .duplicate
        r.mergedInto = target
        r.updatedAt = now
        into.updatedAt = now
        try txn.put(r, appID: app.appID)
        try txn.put(into, appID: app.appID)
        try queue(.feedbackStatusChanged, statusChanged(r, previous: previous), in: txn)
        return r
    }

    /// An admin comment on the request (`authorType` admin).
    public func comment(_ id: [UInt8], body: String, in txn: Transaction) throws -> FeedbackCommentRecord {
        let text = try FeedbackInput.text(body, .comment)
        var r = try request(id, in: txn)
        let last = try txn.lastTimedID(.featureComments, parent: id, at: now)
        let c = FeedbackCommentRecord(id: FeedbackPath.newID(after: last, random), createdAt: now, authorType: .admin,
                                      author: .admin, authorID: actor.rawValue, body: text)
        try addUsage(FeedbackUsageRecord(comments: 1, bytes: c.countedBytes), in: txn)
        try txn.put(c, requestID: id)
        r.commentCount &+= 1
        r.updatedAt = now
        try txn.put(r, appID: app.appID)
        try queue(.feedbackCommented, appData + [
            ("feature_request_id", FeedbackWire.id(id)), ("comment_id", FeedbackWire.id(c.id)),
            ("author_type", "admin"), ("author_id", .string(c.authorID)), ("push_token", .null),
            ("push_environment", .null),
        ], in: txn)
        return c
    }

    // MARK: tickets

    /// The app's tickets (of `status`, when given), newest first.
    public func tickets(status: TicketStatus?, in txn: Transaction) throws -> [TicketRecord] {
        try txn.tickets(appID: app.appID).filter { status == nil || $0.status == status }.newestFirst()
    }

    /// The app's ticket `id`, or 404.
    public func ticket(_ id: [UInt8], in txn: Transaction) throws -> TicketRecord {
        guard let t = try txn.ticket(appID: app.appID, id: id) else {
            throw ServiceError(.notFound, "No ticket \(ReleaseNotes.idText(id)) in \(app.appID).")
        }
        return t
    }

    /// Sets the ticket's status and/or priority (nil leaves it).
    public func setTicket(_ id: [UInt8], status: TicketStatus?, priority: TicketPriority?,
                          in txn: Transaction) throws -> TicketRecord {
        var t = try ticket(id, in: txn)
        let before = t
        t.status = status ?? t.status
        t.priority = priority ?? t.priority
        try storeTicket(&t, before: before, in: txn)
        return t
    }

    /// An admin message on the ticket (`authorType` admin); the ticket becomes `awaiting_reply`.
    public func reply(_ id: [UInt8], body: String, in txn: Transaction) throws -> TicketMessageRecord {
        let text = try FeedbackInput.text(body, .ticketBody)
        var t = try ticket(id, in: txn)
        let before = t
        let last = try txn.lastTimedID(.ticketMessages, parent: id, at: now)
        let m = TicketMessageRecord(id: FeedbackPath.newID(after: last, random), createdAt: now, authorType: .admin,
                                    author: .admin, authorID: actor.rawValue, body: text)
        try addUsage(FeedbackUsageRecord(messages: 1, bytes: m.countedBytes), in: txn)
        try txn.put(m, ticketID: id)
        t.messageCount &+= 1
        t.status = .awaitingReply
        try queue(.ticketMessage, appData + [
            ("ticket_id", FeedbackWire.id(id)), ("message_id", FeedbackWire.id(m.id)), ("author_type", "admin"),
            ("author_id", .string(m.authorID)),
        ], in: txn)
        try storeTicket(&t, before: before, force: true, in: txn)
        return m
    }

    // MARK: shared

    /// Stores `t` when it differs from `before` (or `force`), with `updatedAt` now, and queues
    /// `ticket.status_changed` when its status or priority changed.
    private func storeTicket(_ t: inout TicketRecord, before: TicketRecord, force: Bool = false,
                             in txn: Transaction) throws {
        let changed = t.status != before.status || t.priority != before.priority
        guard changed || force else { return }
        t.updatedAt = now
        try txn.put(t, appID: app.appID)
        guard changed else { return }
        try queue(.ticketStatusChanged, appData + [
            ("ticket_id", FeedbackWire.id(t.id)), ("previous_status", .string(before.status.name)),
            ("status", .string(t.status.name)), ("previous_priority", .string(before.priority.name)),
            ("priority", .string(t.priority.name)), ("push_token", FeedbackEvents.optional(t.pushToken)),
            ("push_environment", FeedbackEvents.optional(t.pushEnvironment)),
        ], in: txn)
    }

    private func statusChanged(_ r: FeatureRequestRecord, previous: FeatureRequestStatus) -> [(String, JSONValue)] {
        appData + [("feature_request_id", FeedbackWire.id(r.id)), ("previous_status", .string(previous.name)),
                   ("status", .string(r.status.name)), ("merged_into", r.mergedInto.map(FeedbackWire.id) ?? .null),
                   ("push_token", FeedbackEvents.optional(r.pushToken)),
                   ("push_environment", FeedbackEvents.optional(r.pushEnvironment))]
    }

    private var appData: [(String, JSONValue)] {
        [("organization", .string(app.org)), ("app_id", .string(app.appID)), ("team_id", .string(app.teamID)),
         ("bundle_id", .string(app.bundleID))]
    }

    private func addUsage(_ change: FeedbackUsageRecord, in txn: Transaction) throws {
        try FeedbackUsage.add(change, org: app.org, in: txn)
    }

    private func queue(_ event: WebhookEvent, _ data: [(String, JSONValue)], in txn: Transaction) throws {
        guard queueEvents else { return }
        try txn.enqueue(OutboxEvent(id: "evt_" + Hex.encode(random.bytes(12)), event: event.rawValue, org: app.org,
                                    createdAt: now, dataJSON: JSONValue.object(data).jsonText))
    }
}
