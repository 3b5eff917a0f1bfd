import AttestConfig
import AttestCore
import AttestStore

/// Every error an endpoint answers with: a stable code, a developer-readable message and an
/// optional hint. `status` is the one place codes meet HTTP (pinned by a table test). The one
/// error type of `AttestService`: two are equal when their codes are; `file` and `line` name the
/// throwing site (logs and tests only, never the wire).
public struct ServiceError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        case badRequest = "bad_request"
        case challengeInvalid = "challenge_invalid"
        case challengeExpired = "challenge_expired"
        case challengeAlreadyUsed = "challenge_already_used"
        case attestationObjectInvalid = "attestation_object_invalid"
        case keyIDInvalid = "key_id_invalid"
        case clientDataHashInvalid = "client_data_hash_invalid"
        case appleValidationFailed = "apple_validation_failed"
        case unauthorized = "unauthorized"
        case quotaExceeded = "quota_exceeded"
        case appNotRegistered = "app_not_registered"
        case forbidden = "forbidden"
        /// Feature requests and support tickets are off for the caller's organization
        /// (`attestctl org set NAME --feedback off`); the SDK's `feedbackNotAvailable`.
        case feedbackNotAvailable = "feedback_not_available"
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
        case reattestRequired = "reattest_required"
        /// What a create names exists already (a feature flag, an environment, a release note
        /// for the same version).
        case conflict = "conflict"
        case payloadTooLarge = "payload_too_large"
        case rateLimited = "rate_limited"
        /// An organization keeps as much in the store as its quota allows (webhook endpoints,
        /// deliveries): 429 until some of it goes.
        case storeQuotaExceeded = "store_quota_exceeded"
        case internalError = "internal_error"
        case notImplemented = "not_implemented"
        case unavailable = "unavailable"
    }

    public let code: Code
    /// Shown to developers as `error` and `reason`; never internals (paths, traces).
    public let message: String
    public let hint: String?
    /// For logs only: the detail behind the message (which verification step failed, the
    /// LMDB error…).
    public let logDetail: String
    /// Extra members of the error body (402's `limit`, `current`, `upgradeUrl`).
    public let extra: [(String, JSONValue)]
    /// Extra response headers (429's `Retry-After` and `X-RateLimit-*`).
    public let headers: [(String, String)]
    /// A compatibility shape (`compat.madLimitStatus` = 429): another status than the code's,
    /// and another `error` member than the message (which stays in `reason`).
    public var compatStatus: Int? = nil
    public var compatErrorMember: String? = nil
    public let file: String
    public let line: Int

    public init(_ code: Code, _ message: String, hint: String? = nil, log: String = "",
                extra: [(String, JSONValue)] = [], headers: [(String, String)] = [],
                file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.hint = hint
        self.logDetail = log
        self.extra = extra
        self.headers = headers
        self.file = file
        self.line = line
    }

    public static func == (lhs: ServiceError, rhs: ServiceError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The HTTP status: the code's, unless a compatibility shape overrides it.
    public var status: Int { compatStatus ?? Self.status(of: code) }

    /// The HTTP status of each code. Exhaustive: a new code does not compile until mapped.
    public static func status(of code: Code) -> Int {
        switch code {
        case .badRequest, .challengeInvalid, .challengeExpired, .challengeAlreadyUsed,
             .attestationObjectInvalid, .keyIDInvalid, .clientDataHashInvalid: return 400
        case .appleValidationFailed, .unauthorized: return 401
        case .quotaExceeded: return 402
        case .appNotRegistered, .forbidden, .feedbackNotAvailable: return 403
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .reattestRequired, .conflict: return 409
        case .payloadTooLarge: return 413
        case .rateLimited, .storeQuotaExceeded: return 429
        case .internalError: return 500
        case .notImplemented: return 501
        case .unavailable: return 503
        }
    }

    public var description: String { "\(code.rawValue): \(message)\(logDetail.isEmpty ? "" : " [\(logDetail)]")" }

    /// The JSON error envelope of docs/contract.md §3.
    public func body(requestID: String) -> JSONValue {
        var members: [(String, JSONValue)] = [("error", .string(compatErrorMember ?? message)),
                                              ("code", .string(code.rawValue))]
        if let hint { members.append(("hint", .string(hint))) }
        members.append(("requestId", .string(requestID)))
        members.append(("reason", .string(message)))
        return .object(members + extra)
    }
}

extension ServiceError {
    /// A store failure: 503 with no internals in the body.
    public static func store(_ error: StoreError) -> ServiceError {
        ServiceError(.unavailable, "The service is temporarily unavailable. Retry shortly.", log: error.description)
    }

    /// Anything unexpected: 500 with no detail in the body.
    public static func unexpected(_ error: any Error) -> ServiceError {
        if let e = error as? ServiceError { return e }
        if let e = error as? StoreError { return .store(e) }
        // No key signs at this moment (the clock stepped back before the first key's
        // activation, or keys were withdrawn): the operator's to fix, the client's to retry.
        if let e = error as? ConfigError, e.code == .keyRing {
            return ServiceError(.unavailable, "The service is temporarily unavailable. Retry shortly.",
                                log: e.description)
        }
        return ServiceError(.internalError, "Internal error.", log: String(describing: error))
    }
}
