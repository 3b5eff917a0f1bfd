import AttestCore

/// `store check`'s checks of feature requests and support tickets (`RecordChecks.table` and
/// `RecordChecks.wholeDatabase` name them): each record decodes and its key has its layout;
/// counts the feedback domain keeps (a request's votes and comments, a ticket's messages, an
/// organization's `FeedbackUsageRecord`) equal a recount; every entry has what it belongs to
/// (a request or ticket its app and its organization's usage record, a vote or comment its
/// request, a message its ticket, a ticket its `tickets_by_author` entry and back).
enum FeedbackChecks {
    static let request: RecordChecks.Check = { key, value, txn in
        // appID ‖ 0x00 ‖ requestID (16) → voteCount, commentCount equal to a recount.
        let request = try FeatureRequestRecord(encoded: value)
        guard let (appID, id) = appItem(key) else { return ["feature request key is not App ID ‖ 0x00 ‖ id (16)"] }
        var problems = try app(appID, "a feature request", txn)
        let votes = try txn.voteCount(requestID: id), comments = try count(.featureComments, id, txn)
        for (name, kept, stored) in [("votes", Int(request.voteCount), votes),
                                     ("comments", Int(request.commentCount), comments)] where kept != stored {
            problems.append("feature request \(Hex.encode(id)) of app \(appID) is counted as having \(kept) \(name); "
                                + "it has \(stored)")
        }
        return problems
    }

    static let vote: RecordChecks.Check = { key, value, _ in
        // requestID (16) ‖ author (17); a vote of no request: `wholeDatabase`.
        _ = try FeatureVoteRecord(encoded: value)
        guard key.count == 16 + FeedbackAuthor.byteCount else {
            return ["vote key of \(key.count) bytes, not 16 + \(FeedbackAuthor.byteCount)"]
        }
        _ = try FeedbackAuthor(bytes: key[16...])
        return []
    }

    static let comment: RecordChecks.Check = { key, value, _ in
        // requestID (16) ‖ createdAt (8) ‖ commentID (16); a comment of no request: `wholeDatabase`.
        _ = try FeedbackCommentRecord(encoded: value)
        return key.count == 40 ? [] : ["comment key of \(key.count) bytes, not 16 + 8 + 16"]
    }

    static let ticket: RecordChecks.Check = { key, value, txn in
        // appID ‖ 0x00 ‖ ticketID (16) → messageCount equal to a recount; listed under its author.
        let ticket = try TicketRecord(encoded: value)
        guard let (appID, id) = appItem(key) else { return ["ticket key is not App ID ‖ 0x00 ‖ id (16)"] }
        var problems = try app(appID, "a ticket", txn)
        let messages = try count(.ticketMessages, id, txn)
        if messages != Int(ticket.messageCount) {
            problems.append("ticket \(Hex.encode(id)) of app \(appID) is counted as having \(ticket.messageCount) "
                                + "messages; it has \(messages)")
        }
        if try txn.get(.ticketsByAuthor, Transaction.ticketAuthorPrefix(appID: appID, ticket.author) + id) == nil {
            problems.append("ticket \(Hex.encode(id)) of app \(appID) is missing from tickets_by_author: "
                                + "its author would not see it")
        }
        return problems
    }

    static let message: RecordChecks.Check = { key, value, _ in
        // ticketID (16) ‖ createdAt (8) ‖ messageID (16); a message of no ticket: `wholeDatabase`.
        _ = try TicketMessageRecord(encoded: value)
        return key.count == 40 ? [] : ["ticket message key of \(key.count) bytes, not 16 + 8 + 16"]
    }

    static let ticketByAuthor: RecordChecks.Check = { key, value, txn in
        // appID ‖ 0x00 ‖ author (17) ‖ ticketID (16) → u8 1: a ticket of that app and author.
        guard let zero = key.firstIndex(of: 0), zero > 0, key.count - zero - 1 == FeedbackAuthor.byteCount + 16 else {
            return ["tickets_by_author key is not App ID ‖ 0x00 ‖ author (17) ‖ id (16)"]
        }
        let author = try FeedbackAuthor(bytes: key[(zero + 1)..<(key.count - 16)]), id = Array(key.suffix(16))
        var problems = value == [1] ? [] : ["tickets_by_author value of \(value.count) bytes, not u8 1"]
        let appID = String(decoding: key[..<zero], as: UTF8.self)
        guard let ticket = try txn.ticket(appID: appID, id: id) else {
            return problems + ["a tickets_by_author entry for no ticket (\(Hex.encode(id)) of app \(appID))"]
        }
        if case .subject = author { return problems }
        if ticket.author != author {
            problems.append("a tickets_by_author entry under \(author) for ticket \(Hex.encode(id)), "
                                + "opened by \(ticket.author)")
        }
        return problems
    }

    static let usage: RecordChecks.Check = { key, value, txn in
        // org → what its apps store of feedback, counted as it changes: equal to a recount.
        let record = try FeedbackUsageRecord(encoded: value)
        let org = String(decoding: key, as: UTF8.self)
        var problems = try txn.org(named: org) == nil ? ["feedback usage of organization \(org), which does not exist"]
                                                       : []
        let counted = try txn.countFeedbackItems(org: org)
        let fields: [(String, UInt64, UInt64)] = [
            ("feature requests", UInt64(record.requests), UInt64(counted.requests)),
            ("comments", UInt64(record.comments), UInt64(counted.comments)),
            ("tickets", UInt64(record.tickets), UInt64(counted.tickets)),
            ("ticket messages", UInt64(record.messages), UInt64(counted.messages)),
            ("bytes of text", record.bytes, counted.bytes),
        ]
        for (name, kept, stored) in fields where kept != stored {
            problems.append("organization \(org) is counted as storing \(kept) \(name); it stores \(stored)")
        }
        return problems
    }

    /// Entries of `db` whose first 16 bytes name no entry of `parent` (whose keys end in the
    /// 16-byte id); and an id stored under two apps, whose children would be shared.
    /// `tickets` and the entries of `tickets_by_author` under an author (not a subject's):
    /// one each (every ticket is listed under its author once, `ticketByAuthor` checks the rest).
    static let authorEntriesCount: RecordChecks.WholeCheck = { txn in
        var tickets = 0, entries = 0
        try txn.scan(.tickets) { _, _ in tickets += 1; return true }
        try txn.scan(.ticketsByAuthor) { key, _ in
            if let zero = key.firstIndex(of: 0), zero + 1 < key.count, key[zero + 1] == 4 { return true }
            entries += 1
            return true
        }
        return tickets == entries ? []
            : ["tickets has \(tickets) entries, tickets_by_author \(entries) under their authors"]
    }

    static func orphans(_ db: Database, of parent: Database, _ what: String,
                        _ parentName: String) -> RecordChecks.WholeCheck {
        { txn in
            var ids = Set<[UInt8]>(), problems = [String]()
            try txn.scan(parent) { key, _ in
                guard key.count >= 16 else { return true }
                if !ids.insert(Array(key.suffix(16))).inserted {
                    problems.append("\(parentName) id \(Hex.encode(key.suffix(16))) is stored under two apps")
                }
                return true
            }
            try txn.scan(db) { key, _ in
                if key.count < 16 || !ids.contains(Array(key.prefix(16))) {
                    problems.append("\(what) of no \(parentName) (\(Hex.encode(key.prefix(16))))")
                }
                return true
            }
            return problems
        }
    }

    /// App ID and id of a key `appID ‖ 0x00 ‖ id (16)`; nil for another layout.
    static func appItem(_ key: [UInt8]) -> (String, [UInt8])? {
        guard let zero = key.firstIndex(of: 0), zero > 0, key.count - zero == 17 else { return nil }
        return (String(decoding: key[..<zero], as: UTF8.self), Array(key[(zero + 1)...]))
    }

    /// No problem when the app exists and its organization has its `feedback_usage` record
    /// (which the feedback domain writes with the organization's first request or ticket).
    static func app(_ appID: String, _ what: String, _ txn: Transaction) throws -> [String] {
        guard let app = try txn.app(id: appID) else { return ["\(what) of app \(appID), which does not exist"] }
        guard try txn.feedbackUsage(org: app.org) == nil else { return [] }
        return ["\(what) of app \(appID), whose organization \(app.org) has no feedback_usage record"]
    }

    /// Entries of `db` under `prefix`, counted.
    static func count(_ db: Database, _ prefix: [UInt8], _ txn: Transaction) throws -> Int {
        var n = 0
        try txn.scanPrefix(db, prefix) { _, _ in n += 1 }
        return n
    }
}
