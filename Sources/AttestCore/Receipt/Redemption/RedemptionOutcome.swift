/// What one redemption attempt came to: Apple's answer (or its absence) classified as Apple's
/// "Assessing fraud risk" documents the codes (`RedemptionOutcome.classify`). The next
/// attempt's time is `RedemptionSchedule.next`'s.
///
/// | status | kind | next step |
/// |---|---|---|
/// | 200 | redeemed | store the new receipt (after verifying it) in place of the old |
/// | 304 | tooEarly | asked before the receipt's not-before: try again then |
/// | 400 "Incorrect Environment" | wrongEnvironment | this receipt never redeems there: stop it |
/// | 400 otherwise ("Bad Payload") | badPayload | this receipt is refused: stop it |
/// | 401 | unauthorized | the token or key is wrong: stop the whole team (doctor complains) |
/// | 404 | noData | Apple has nothing (older than 30 days): keep the old receipt, try much later |
/// | 429 | throttled | back off (doubling, jittered) |
/// | 5xx, other | serverError / unexpected | back off |
/// | no answer | transportError | back off |
public struct RedemptionOutcome: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case redeemed, tooEarly = "too_early", wrongEnvironment = "wrong_environment", badPayload = "bad_payload"
        case unauthorized, noData = "no_data", throttled, serverError = "server_error"
        case transportError = "transport_error", unexpected
    }

    public let kind: Kind
    /// The HTTP status; 0 when there was no answer.
    public let status: UInt16
    /// One line for logs and `attestctl receipts status` (never the token or key).
    public let text: String

    public init(kind: Kind, status: UInt16, text: String) {
        self.kind = kind
        self.status = status
        self.text = text
    }

    /// A 401: every receipt of the team waits until its key is registered again.
    public var stopsTeam: Bool { kind == .unauthorized }
    /// Whether the attempt counts toward the backoff (`failures` grows; a 200 resets it).
    public var backsOff: Bool { [.throttled, .serverError, .transportError, .unexpected].contains(kind) }
    /// Whether this receipt is never sent again.
    public var endsReceipt: Bool { kind == .wrongEnvironment || kind == .badPayload }
    /// The `status` label of `attestedge_receipt_redemptions_total`: the code, or "error".
    public var metricLabel: String { status == 0 ? "error" : String(status) }

    /// The most of Apple's answer body quoted in `text`.
    public static let excerptBytes = 120

    /// Classifies Apple's answer (`status`, `body`), or a transport failure (`error`, no answer).
    public static func classify(status: Int, body: [UInt8], error: String? = nil) -> RedemptionOutcome {
        if let error { return RedemptionOutcome(kind: .transportError, status: 0, text: "no answer: \(error)") }
        let code = UInt16(clamping: max(status, 0))
        let said = excerpt(body)
        let quoted = said.isEmpty ? "" : ": \"\(said)\""
        switch status {
        case 200:
            return RedemptionOutcome(kind: .redeemed, status: code, text: "200 new receipt")
        case 304:
            return RedemptionOutcome(kind: .tooEarly, status: code, text: "304 before the receipt's not-before")
        case 400 where said.lowercased().contains("incorrect environment"):
            return RedemptionOutcome(kind: .wrongEnvironment, status: code,
                                     text: "400 incorrect environment (not retried)\(quoted)")
        case 400:
            return RedemptionOutcome(kind: .badPayload, status: code, text: "400 bad payload (not retried)\(quoted)")
        case 401:
            return RedemptionOutcome(kind: .unauthorized, status: code,
                                     text: "401 token not accepted: the team's redemptions stop\(quoted)")
        case 404:
            return RedemptionOutcome(kind: .noData, status: code, text: "404 no data for this receipt (kept)")
        case 429:
            return RedemptionOutcome(kind: .throttled, status: code, text: "429 too many requests")
        case 500...599:
            return RedemptionOutcome(kind: .serverError, status: code, text: "\(status) server error\(quoted)")
        default:
            return RedemptionOutcome(kind: .unexpected, status: code, text: "\(status) unexpected answer\(quoted)")
        }
    }

    /// The start of `body` as one printable line (controls replaced, at most `excerptBytes`).
    static func excerpt(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(excerptBytes), as: UTF8.self)
        return String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
            .trimmingSpaces
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
