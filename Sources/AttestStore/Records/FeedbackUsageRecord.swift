import AttestCore

/// What an organization stores of feature requests and support tickets, for tier limits at
/// the cost of one read. The store keeps no counts: the feedback domain bumps these in the
/// transaction of each write (and lowers them with each removal); `attestctl store check`
/// recounts them from what is stored.
///
/// Key in `feedback_usage`: the organization's name (UTF-8). Layout v1:
/// ```
/// u8 1 | requests u32 | comments u32 | tickets u32 | messages u32 | bytes u64
/// ```
/// `bytes` is the UTF-8 text stored: each request's title and description, comment bodies,
/// ticket subjects and message bodies (the records' `countedBytes`).
public struct FeedbackUsageRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "feedback usage"

    public var requests: UInt32
    public var comments: UInt32
    public var tickets: UInt32
    public var messages: UInt32
    public var bytes: UInt64

    public init(requests: UInt32 = 0, comments: UInt32 = 0, tickets: UInt32 = 0, messages: UInt32 = 0,
                bytes: UInt64 = 0) {
        self.requests = requests
        self.comments = comments
        self.tickets = tickets
        self.messages = messages
        self.bytes = bytes
    }

    public func encode(into w: inout BinaryWriter) {
        w.u32(requests)
        w.u32(comments)
        w.u32(tickets)
        w.u32(messages)
        w.u64(bytes)
    }

    public init(from r: inout BinaryReader) throws {
        requests = try r.u32()
        comments = try r.u32()
        tickets = try r.u32()
        messages = try r.u32()
        bytes = try r.u64()
    }
}
