/// The one error type of `FastCGI`.
///
/// `code` is stable and is what callers and tests compare: two errors are equal when their
/// codes are equal. `flag` names the command-line flag at fault, when there is one; `reason`
/// is the message for the operator.
public struct FastCGIError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// A required flag is absent (`--socket`).
        case missingOption = "missing_option"
        /// A flag has no value or a value out of range.
        case invalidOption = "invalid_option"
        /// The listening socket could not be created.
        case socket = "socket"
        /// A connection's record stream breaks the FastCGI protocol (`RequestParser`).
        case protocolViolation = "protocol_violation"
        /// A request's `FCGI_PARAMS` stream is over `RequestParser.maxParamsBytes`.
        case paramsTooLarge = "params_too_large"
        /// The peer sent nothing for too long (`Connection.Timeouts`).
        case timeout = "timeout"
    }

    public let code: Code
    public let flag: String?
    public let reason: String

    public init(_ code: Code, flag: String? = nil, _ reason: String) {
        self.code = code
        self.flag = flag
        self.reason = reason
    }

    public static func == (lhs: FastCGIError, rhs: FastCGIError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String {
        if let flag { return "\(flag): \(reason)" }
        return reason
    }
}
