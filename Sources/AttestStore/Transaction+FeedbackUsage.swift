import AttestCore

/// What each organization stores of feature requests and tickets (`FeedbackUsageRecord`).
///
/// ```
/// feedback_usage  org name (UTF-8)  → FeedbackUsageRecord
/// ```
/// No record reads as all zeros. The feedback domain bumps it in the transaction of each
/// write; `attestctl store check` compares it with `countFeedbackItems(org:)`.
extension Transaction {
    public func feedbackUsage(org: String) throws -> FeedbackUsageRecord? {
        try get(.feedbackUsage, Self.orgKey(org)).map(FeedbackUsageRecord.init(encoded:))
    }

    public func put(_ usage: FeedbackUsageRecord, org: String) throws {
        try put(.feedbackUsage, Self.orgKey(org), usage.encoded())
    }

    /// An organization's name as `feedback_usage` keys hold it.
    /// - Throws: `StoreError(.invalidKey)` for an empty name.
    static func orgKey(_ org: String) throws -> [UInt8] {
        guard !org.isEmpty else { throw StoreError(.invalidKey, "an empty organization name") }
        return Array(org.utf8)
    }

    /// What the organization's apps store, counted: requests, their comments, tickets, their
    /// messages and the text bytes of them all (`store check` compares it with the record).
    /// Counted by key: an entry that does not decode counts with no bytes (`store check`
    /// names it where it lies).
    func countFeedbackItems(org: String) throws -> FeedbackUsageRecord {
        var usage = FeedbackUsageRecord()
        func children(_ db: Database, of parent: ArraySlice<UInt8>, _ bytes: ([UInt8]) -> UInt64?) throws -> UInt32 {
            var n: UInt32 = 0
            guard parent.count == 16 else { return 0 }
            try scanPrefix(db, Array(parent)) { _, value in
                n &+= 1
                usage.bytes &+= bytes(value) ?? 0
            }
            return n
        }
        for app in try apps() where app.org == org {
            let prefix = try Self.appPrefix(app.appID)
            try scanPrefix(.featureRequests, prefix) { id, value in
                usage.requests &+= 1
                usage.bytes &+= (try? FeatureRequestRecord(encoded: value))?.countedBytes ?? 0
                usage.comments &+= try children(.featureComments, of: id) {
                    (try? FeedbackCommentRecord(encoded: $0))?.countedBytes
                }
            }
            try scanPrefix(.tickets, prefix) { id, value in
                usage.tickets &+= 1
                usage.bytes &+= (try? TicketRecord(encoded: value))?.countedBytes ?? 0
                usage.messages &+= try children(.ticketMessages, of: id) {
                    (try? TicketMessageRecord(encoded: $0))?.countedBytes
                }
            }
        }
        return usage
    }
}
