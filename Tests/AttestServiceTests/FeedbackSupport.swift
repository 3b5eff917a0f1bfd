import AttestConfig
import AttestCore
@testable import AttestService
import AttestStore
import AttestTesting
import FastCGI
import Foundation
import Testing

/// Strict mirrors of the SDK's feedback models (grantiva/ios-sdk `FeatureRequest.swift`,
/// `SupportTicket.swift`), decoded as its `FeedbackAPIClient` does: default `JSONDecoder`,
/// dates `.iso8601` (no fractional seconds), closed enums. Unlike the SDK, a list with one item
/// that does not decode fails here (the SDK would drop the item silently).
enum SDKFeedback {
    enum Status: String, Decodable { case pending, open, planned, in_progress, shipped, declined, duplicate }
    enum AuthorType: String, Decodable { case user, admin }
    enum TicketStatus: String, Decodable { case open, awaiting_reply, resolved, closed }
    enum Priority: String, Decodable { case low, normal, high, urgent }

    struct FeatureRequest: Decodable {
        let id: UUID
        let title: String
        let description: String
        let status: Status
        let voteCount: Int
        let hasVoted: Bool
        let commentCount: Int
        let createdAt: Date
        let updatedAt: Date
    }

    struct Metadata: Decodable { let page: Int; let per: Int; let total: Int }
    struct Page: Decodable { let items: [FeatureRequest]; let metadata: Metadata }
    struct Vote: Decodable { let id: UUID; let featureRequestId: UUID; let createdAt: Date }
    struct Comment: Decodable {
        let id: UUID
        let featureRequestId: UUID
        let authorType: AuthorType
        let body: String
        let createdAt: Date
    }

    struct Ticket: Decodable {
        let id: UUID
        let subject: String
        let status: TicketStatus
        let priority: Priority
        let messageCount: Int
        let createdAt: Date
        let updatedAt: Date
    }

    struct Message: Decodable {
        let id: UUID
        let ticketId: UUID
        let authorType: AuthorType
        let body: String
        let createdAt: Date
    }

    struct TicketDetail: Decodable {
        let id: UUID
        let subject: String
        let status: TicketStatus
        let priority: Priority
        let messages: [Message]
        let createdAt: Date
        let updatedAt: Date
    }

    static func decode<T: Decodable>(_ type: T.Type, _ r: Response) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(r.body))
    }
}

/// The feedback pool in-process, with the fixture's device enrolled (`token`) and helpers for
/// more devices, each its own lineage.
final class FeedbackPool {
    let flow: DeviceFlow
    let token: String

    init(subjectLinks: SubjectLinkPolicy = .asserted, subjectID: String? = nil,
         configure: (inout Configuration) -> Void = { _ in }) throws {
        flow = try DeviceFlow(subjectLinks: subjectLinks, configure: configure)
        let extra: [(String, JSONValue)] = subjectID.map { [("subjectId", .string($0))] } ?? []
        let (status, body) = try flow.attest(flow.device, extra)
        guard status == 200, let token = body["token"]?.stringValue else {
            throw FixtureError("enroll failed: \(status) \(body.jsonText)")
        }
        self.token = token
    }

    var context: ServiceContext { flow.context }
    var now: Timestamp { flow.fixture.clock.now() }

    /// Enrolls another device (another lineage), linked to `subjectID` if given; its token.
    func device(subjectID: String? = nil) throws -> String {
        let extra: [(String, JSONValue)] = subjectID.map { [("subjectId", .string($0))] } ?? []
        let (status, body) = try flow.attest(try SoftwareDevice.generate(), extra)
        guard status == 200, let token = body["token"]?.stringValue else {
            throw FixtureError("enroll failed: \(status) \(body.jsonText)")
        }
        return token
    }

    func headers(_ token: String?) -> [String: String] {
        var h = Fixture.appHeaders
        if let token { h["Authorization"] = "Bearer " + token }
        return h
    }

    /// A call as nginx passes it to `feedback.sock`; `token` nil sends the app headers alone.
    func call(_ method: String, _ path: String, query: String = "", body: String? = nil,
              token: String?? = .none, headers extra: [String: String] = [:]) -> Response {
        let t: String? = token ?? self.token
        var params = ["REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_ID": "req-fb", "REMOTE_ADDR": "127.0.0.1",
                      "QUERY_STRING": query, "REQUEST_URI": path + (query.isEmpty ? "" : "?" + query)]
        for (k, v) in headers(t).merging(extra, uniquingKeysWith: { $1 }) {
            params["HTTP_" + k.uppercased().replacingOccurrences(of: "-", with: "_")] = v
        }
        let request = Request(method: method, path: path, query: query, params: params, body: Array((body ?? "").utf8))
        return Endpoint.feedback.handle(request, context)
    }

    static let features = "/api/v1/feedback/features"
    static let tickets = "/api/v1/support/tickets"

    /// Creates a feature request as the SDK does; the response.
    func create(title: String = "Dark mode", description: String = "Please add a dark mode to the app.",
                submitter: String = "submitter-a", push: Bool = false, token: String? = nil) -> Response {
        var members: [(String, JSONValue)] = [("title", .string(title)), ("description", .string(description)),
                                              ("submitterId", .string(submitter)), ("deviceHash", "hash-a")]
        if push { members += [("pushToken", "a1b2c3d4e5f6"), ("pushEnvironment", "production")] }
        return call("POST", Self.features, body: JSONValue.object(members).jsonText, token: .some(token ?? self.token))
    }

    func openTicket(subject: String = "Cannot log in", body: String = "The login button does nothing.",
                    submitter: String = "user-42", token: String? = nil) -> Response {
        call("POST", Self.tickets, body: JSONValue.object([
            ("subject", .string(subject)), ("body", .string(body)), ("submitterId", .string(submitter)),
            ("submitterEmail", "a@example.com"), ("deviceHash", "hash-a"),
        ]).jsonText, token: .some(token ?? self.token))
    }

    static func json(_ r: Response) -> JSONValue { (try? JSONParser.parse(r.body)) ?? .null }

    /// The outbox's events of `name`, their data.
    func events(_ name: String) throws -> [JSONValue] {
        try context.store.read { txn in
            try txn.outbox().map(\.event).filter { $0.event == name }.map { try JSONParser.parse($0.dataJSON) }
        }
    }
}

extension Response {
    /// The first header named `name`.
    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
}
