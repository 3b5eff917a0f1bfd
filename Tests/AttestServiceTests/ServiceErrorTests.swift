@testable import AttestConfig
import AttestCore
@testable import AttestService
import AttestStore
import Testing

/// Pins the code → status table of docs/contract.md §2–§3.
@Suite struct ServiceErrorTests {
    static let table: [(ServiceError.Code, Int)] = [
        (.badRequest, 400), (.challengeInvalid, 400), (.challengeExpired, 400), (.challengeAlreadyUsed, 400),
        (.attestationObjectInvalid, 400), (.keyIDInvalid, 400), (.clientDataHashInvalid, 400),
        (.appleValidationFailed, 401), (.unauthorized, 401), (.quotaExceeded, 402), (.appNotRegistered, 403),
        (.forbidden, 403), (.feedbackNotAvailable, 403), (.notFound, 404), (.methodNotAllowed, 405), (.reattestRequired, 409), (.conflict, 409),
        (.payloadTooLarge, 413), (.rateLimited, 429), (.storeQuotaExceeded, 429), (.internalError, 500),
        (.notImplemented, 501), (.unavailable, 503),
    ]

    @Test func everyCodeHasItsStatus() {
        #expect(Self.table.count == ServiceError.Code.allCases.count, "the table covers every code")
        for (code, status) in Self.table {
            #expect(ServiceError(code, "x").status == status, "\(code.rawValue) → \(status)")
        }
    }

    @Test func wireCodesAreTheSpecs() {
        let names = Set(ServiceError.Code.allCases.map(\.rawValue))
        for name in ["bad_request", "challenge_invalid", "challenge_expired", "challenge_already_used",
                     "attestation_object_invalid", "key_id_invalid", "client_data_hash_invalid",
                     "apple_validation_failed", "quota_exceeded", "app_not_registered", "forbidden", "not_found",
                     "reattest_required", "payload_too_large", "rate_limited", "unavailable"] {
            #expect(names.contains(name), "\(name) exists")
        }
    }

    @Test func envelopeHasErrorCodeHintRequestIDReason() {
        let body = ServiceError(.challengeExpired, "Challenge expired.", hint: "Get a new one.",
                                log: "internal detail").body(requestID: "abc")
        #expect(body["error"]?.stringValue == "Challenge expired.")
        #expect(body["code"]?.stringValue == "challenge_expired")
        #expect(body["hint"]?.stringValue == "Get a new one.")
        #expect(body["requestId"]?.stringValue == "abc")
        #expect(body["reason"]?.stringValue == "Challenge expired.")
        #expect(!body.jsonText.contains("internal detail"), "log detail never reaches the body")
    }

    @Test func storeErrorsBecome503WithoutInternals() {
        let e = ServiceError.unexpected(AttestStore.StoreError(.full, "MDB_MAP_FULL at /var/lib/x"))
        #expect(e.status == 503 && e.code == .unavailable)
        #expect(!e.body(requestID: "r").jsonText.contains("/var/lib"))
    }

    @Test func noActiveSigningKeyIs503NotAnInternalError() {
        let e = ServiceError.unexpected(
            ConfigError(.keyRing, "no signing key is active at 2026-01-01T00:00:00Z: run 'attestctl keys list'"))
        #expect(e.status == 503 && e.code == .unavailable,
                "a clock stepped back before the first key: retry, not a bug")
        #expect(!e.body(requestID: "r").jsonText.contains("attestctl"))
        #expect(ServiceError.unexpected(ConfigError(.fileSystem, "cannot write /x")).status == 500,
                "only the key ring's errors are 503")
    }

    @Test func unknownErrorsBecome500WithoutDetail() {
        struct Secret: Error {}
        let e = ServiceError.unexpected(Secret())
        #expect(e.status == 500)
        #expect(!e.body(requestID: "r").jsonText.contains("Secret"))
    }
}
