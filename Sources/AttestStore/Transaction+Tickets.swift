import AttestCore

/// Support tickets, their messages, and each author's tickets (the records have the layouts).
///
/// ```
/// tickets            appID ‖ 0x00 ‖ ticketID (16)                        → TicketRecord
/// ticket_messages    ticketID (16) ‖ createdAt i64 BE (8) ‖ messageID (16) → TicketMessageRecord
/// tickets_by_author  appID ‖ 0x00 ‖ author (17) ‖ ticketID (16)           → u8 1
/// ```
/// `put(_:appID:)` keeps `tickets_by_author` in step with the ticket's author;
/// `listTicket(_:appID:under:)` adds the entry of a subject (`FeedbackAuthor.subject`), which
/// is not the ticket's author and stays when the author changes. The store
/// keeps no counts: the feedback domain bumps `messageCount` and the organization's
/// `FeedbackUsageRecord` in the transaction of each change; `attestctl store check` recounts.
extension Transaction {
    /// `appID ‖ 0x00 ‖ author (17)`: the start of the author's `tickets_by_author` entries.
    static func ticketAuthorPrefix(appID: String, _ author: FeedbackAuthor) throws -> [UInt8] {
        try appPrefix(appID) + author.bytes()
    }

    public func ticket(appID: String, id: [UInt8]) throws -> TicketRecord? {
        guard let bytes = try get(.tickets, Self.appItemKey(appID: appID, id, "ticket")) else { return nil }
        var ticket = try TicketRecord(encoded: bytes)
        ticket.id = id
        return ticket
    }

    /// Every ticket of the app, in id order (bytewise).
    public func tickets(appID: String) throws -> [TicketRecord] {
        var found = [TicketRecord]()
        try scanPrefix(.tickets, Self.appPrefix(appID)) { rest, value in
            guard rest.count == 16 else { throw StoreError(.corrupt, "ticket id of \(rest.count) bytes") }
            var ticket = try TicketRecord(encoded: value)
            ticket.id = Array(rest)
            found.append(ticket)
        }
        return found
    }

    /// The tickets the author opened in the app, in id order, through `tickets_by_author`
    /// (an entry whose ticket is missing is skipped here; `store check` names it).
    public func tickets(appID: String, author: FeedbackAuthor) throws -> [TicketRecord] {
        var ids = [[UInt8]]()
        try scanPrefix(.ticketsByAuthor, Self.ticketAuthorPrefix(appID: appID, author)) { rest, _ in
            guard rest.count == 16 else { throw StoreError(.corrupt, "ticket index id of \(rest.count) bytes") }
            ids.append(Array(rest))
        }
        return try ids.compactMap { try ticket(appID: appID, id: $0) }
    }

    /// Stores the ticket and its `tickets_by_author` entry (moving it when the stored
    /// ticket had another author).
    /// - Throws: `StoreError(.invalidKey)` for an id or author digest that is not 16 bytes or an
    ///   App ID the keys cannot hold, `StoreError(.tooLarge)` for a record over 64 KiB.
    public func put(_ ticket: TicketRecord, appID: String) throws {
        let key = try Self.appItemKey(appID: appID, ticket.id, "ticket")
        let indexKey = try Self.ticketAuthorPrefix(appID: appID, ticket.author) + ticket.id
        if let refusal = ticket.writeRefusal { throw StoreError(.tooLarge, refusal) }
        if let old = try get(.tickets, key) {
            let previous = try TicketRecord(encoded: old).author
            if previous != ticket.author {
                try delete(.ticketsByAuthor, Self.ticketAuthorPrefix(appID: appID, previous) + ticket.id)
            }
        }
        try put(.tickets, key, ticket.encoded())
        try put(.ticketsByAuthor, indexKey, [1])
    }

    /// Lists the ticket under a subject as well (`FeedbackAuthor.subject`): the devices
    /// verifiably linked to that subject read it. - Throws: `StoreError(.invalidKey)` for
    /// another kind of author, an id or digest that is not 16 bytes.
    public func listTicket(_ ticketID: [UInt8], appID: String, under subject: FeedbackAuthor) throws {
        guard case .subject = subject else {
            throw StoreError(.invalidKey, "a ticket is listed under its author by put; here only under a subject")
        }
        try put(.ticketsByAuthor, Self.ticketAuthorPrefix(appID: appID, subject) + Self.feedbackID(ticketID, "ticket"),
                [1])
    }

    /// Whether `tickets_by_author` lists the ticket under `author` (its opener, or a subject).
    public func ticketListed(_ ticketID: [UInt8], appID: String, under author: FeedbackAuthor) throws -> Bool {
        try get(.ticketsByAuthor, Self.ticketAuthorPrefix(appID: appID, author) + Self.feedbackID(ticketID, "ticket"))
            != nil
    }

    /// The ticket's messages, oldest first (same second: by id).
    public func messages(ticketID: [UInt8]) throws -> [TicketMessageRecord] {
        var found = [TicketMessageRecord]()
        try timedRecords(.ticketMessages, ticketID, "ticket message") { at, id, value in
            var message = try TicketMessageRecord(encoded: value)
            (message.createdAt, message.id) = (at, id)
            found.append(message)
        }
        return found
    }

    /// - Throws: `StoreError(.invalidKey)` for an id or author digest that is not 16 bytes,
    ///   `StoreError(.tooLarge)` for a record over 64 KiB.
    public func put(_ message: TicketMessageRecord, ticketID: [UInt8]) throws {
        let key = try Self.timedKey(ticketID, message.createdAt, message.id, "ticket message")
        _ = try message.author.bytes()
        if let refusal = message.writeRefusal { throw StoreError(.tooLarge, refusal) }
        try put(.ticketMessages, key, message.encoded())
    }
}
