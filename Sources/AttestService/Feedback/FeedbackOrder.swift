import AttestCore
import AttestStore

/// A feature request or a ticket: what lists order by.
protocol FeedbackItem {
    var createdAt: Timestamp { get }
    var id: [UInt8] { get }
}

extension FeatureRequestRecord: FeedbackItem {}
extension TicketRecord: FeedbackItem {}

extension Sequence where Element: FeedbackItem {
    /// Newest first; items of the same second by id (bytewise), so the order is stable.
    func newestFirst() -> [Element] {
        sorted { $0.createdAt != $1.createdAt ? $0.createdAt > $1.createdAt : $0.id.lexicographicallyPrecedes($1.id) }
    }
}
