/// The one error type of `attestctl status`'s logic: why there is no status to show, as a
/// sentence the operator can act on (printed as `attestctl status: MESSAGE`, exit status 1).
///
/// `code` is stable and is what tests compare: two failures are equal when their codes are.
public struct StatusFailure: Error, Hashable, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable, CaseIterable {
        /// Nothing answered at the metrics URL (refused, timed out, no such host).
        case unreachable
        /// Something answered, but not 200 with Prometheus's text format.
        case answer
        /// The text breaks Prometheus's text format 0.0.4 (the message names the line).
        case syntax
        /// A family `status` needs is not in the answer.
        case missingFamily = "missing_family"
        /// A family has another type than the metric-name contract gives it.
        case familyType = "family_type"
    }

    public let code: Code
    public let message: String

    /// `message` quotes what the metrics URL answered, which whoever listens there chose: its
    /// control characters (an escape sequence for root's terminal) are shown as "?", here,
    /// where every message passes.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = ServiceStatus.shown(message)
    }

    public static func == (lhs: StatusFailure, rhs: StatusFailure) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { message }
}
