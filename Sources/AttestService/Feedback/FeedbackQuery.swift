import AttestCore
import AttestStore
import FastCGI

/// The list query of `GET /api/v1/feedback/features`:
///
/// ```
/// sort    votes | most_voted (most votes first, then newest) | newest | oldest   default votes
/// status  pending|open|planned|in_progress|shipped|declined|duplicate          default: every status
/// page    1…                                                                    default 1
/// per     1…100                                                                 default 20
/// ```
/// Each member at most once, %-decoded strictly; another value is 400 naming it. `voter_id`
/// and other members are ignored (`hasVoted` comes from the caller's author). Ties are broken
/// by id, so pages do not overlap.
struct FeedbackQuery {
    enum Sort: String { case votes, mostVoted = "most_voted", newest, oldest }

    var sort = Sort.votes
    var status: FeatureRequestStatus?
    var page = 1
    var per = 20

    init(_ request: Request) throws {
        if let s = try FlagsAdminEndpoint.query(request, "sort") {
            guard let sort = Sort(rawValue: s) else {
                throw FeedbackInput.invalid("sort", "sort must be votes, most_voted, newest or oldest.")
            }
            self.sort = sort
        }
        if let s = try FlagsAdminEndpoint.query(request, "status") {
            guard let status = FeatureRequestStatus(name: s) else {
                throw FeedbackInput.invalid("status", "status must be pending, open, planned, in_progress, shipped, "
                                                      + "declined or duplicate.")
            }
            self.status = status
        }
        page = try Self.number(request, "page", 1...1_000_000) ?? 1
        per = try Self.number(request, "per", 1...100) ?? 20
    }

    private static func number(_ request: Request, _ name: String, _ range: ClosedRange<Int>) throws -> Int? {
        guard let text = try FlagsAdminEndpoint.query(request, name) else { return nil }
        guard text.utf8.count <= 7, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(text),
              range.contains(n) else {
            throw FeedbackInput.invalid(name, "\(name) must be a whole number from \(range.lowerBound) to "
                                              + "\(range.upperBound).")
        }
        return n
    }

    /// `requests` filtered, sorted and cut to the page; and how many passed the filter.
    func page(_ requests: [FeatureRequestRecord]) -> (items: [FeatureRequestRecord], total: Int) {
        let kept = requests.filter { status == nil || $0.status == status }
        let sorted = kept.sorted { a, b in
            switch sort {
            case .votes, .mostVoted:
                if a.voteCount != b.voteCount { return a.voteCount > b.voteCount }
                if a.createdAt != b.createdAt { return a.createdAt > b.createdAt }
            case .newest:
                if a.createdAt != b.createdAt { return a.createdAt > b.createdAt }
            case .oldest:
                if a.createdAt != b.createdAt { return a.createdAt < b.createdAt }
            }
            return a.id.lexicographicallyPrecedes(b.id)
        }
        let start = min(sorted.count, (page - 1) * per)
        return (Array(sorted[start..<min(sorted.count, start + per)]), kept.count)
    }
}
