import AttestCore
import AttestStore
import CLISupport

/// The receipt part of `attestctl device show`: what validate's check found, the fields,
/// the redemption's state and Apple's risk metrics received (`ReceiptRecord`).
///
/// `--json`: `receipt {check, reason, anchor, type, appId, environment, createdAt, notBefore,
/// expiresAt, riskMetric, credentialCertSha256, nextRedeemAt, failures, lastAttemptAt,
/// lastStatus, lastOutcome, redeemedAt, history: [{at, metric}]}` (unknown times and the
/// metric null; `lastStatus` 0: no HTTP answer), or null when the key has no receipt.
enum DeviceReceipt {
    static func json(_ r: ReceiptRecord?) -> JSONValue {
        guard let r else { return .null }
        func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }
        return .object([
            ("check", .string(r.check.name)), ("reason", .string(r.reason)),
            ("anchor", .string(r.anchor == .apple ? "apple" : "test_root")),
            ("type", .string(r.kind)), ("appId", .string(r.appID)), ("environment", .string(r.environment)),
            ("createdAt", time(r.createdAt)), ("notBefore", time(r.notBefore)), ("expiresAt", time(r.expiresAt)),
            ("riskMetric", r.riskMetric.map { .int(Int64($0)) } ?? .null),
            ("credentialCertSha256", .string(Hex.encode(r.credentialCertSHA256))),
            ("nextRedeemAt", time(r.nextRedeemAt)), ("failures", .int(Int64(r.failures))),
            ("lastAttemptAt", time(r.lastAttemptAt)), ("lastStatus", .int(Int64(r.lastStatus))),
            ("lastOutcome", .string(r.lastOutcome)), ("redeemedAt", time(r.redeemedAt)),
            ("history", .array(r.history.map { .object([("at", .string($0.at.iso8601)),
                                                          ("metric", .int(Int64($0.metric)))]) })),
        ])
    }

    /// The text form: one line per field that is known, then the metric's history.
    static func lines(_ r: ReceiptRecord?) -> [String] {
        guard let r else { return ["\nno receipt stored for this key"] }
        var out = ["\nreceipt \(r.check.name)\(r.reason.isEmpty ? "" : ": \(r.reason)")"
                   + " (\(r.anchor == .apple ? "Apple Root CA - G3" : "a test receipt root"))"]
        let fields: [(String, String?)] = [
            ("type", r.kind), ("appId", r.appID), ("environment", r.environment), ("createdAt", r.createdAt?.iso8601),
            ("notBefore", r.notBefore?.iso8601), ("expiresAt", r.expiresAt?.iso8601),
            ("riskMetric", r.riskMetric.map(String.init)),
            ("credentialCertSha256", r.credentialCertSHA256.isEmpty ? nil : Hex.encode(r.credentialCertSHA256)),
            ("nextRedeemAt", r.nextRedeemAt?.iso8601 ?? "not scheduled"),
            ("lastAttemptAt", r.lastAttemptAt.map { "\($0.iso8601) (HTTP \(r.lastStatus == 0 ? "none" : "\(r.lastStatus)"))"
                                                     + "\(r.lastOutcome.isEmpty ? "" : " \(r.lastOutcome)")" }),
            ("failures", r.failures > 0 ? String(r.failures) : nil), ("redeemedAt", r.redeemedAt?.iso8601),
        ]
        for case let (name, value?) in fields where !value.isEmpty { out.append("  \(Output.pad(name, 20)) \(value)") }
        out.append(r.history.isEmpty ? "  no risk metric received yet"
                                     : "  risk metric history (oldest first, \(ReceiptRecord.maximumHistory) kept):")
        for sample in r.history { out.append("    \(sample.at.iso8601)  \(sample.metric)") }
        return out
    }
}
