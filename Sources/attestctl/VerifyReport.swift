import AttestCore
import CLISupport
import FoundationEssentials

/// The outcome of `attestctl verify`: each step's status, and what a valid input establishes.
///
/// JSON form (`--json`, keys sorted, absent values left out):
/// ```
/// { "valid": bool, "kind": "attestation" | "assertion", "code": text, "reason": text,   ; code, reason when invalid
///   "environment": "production" | "development", "publicKey": b64 point, "keyId": b64,  ; valid attestation
///   "signCount": 0, "receiptLength": n, "validationCategory": n, "bundleVersion": text,
///   "counter": n,                                                                       ; valid assertion
///   "steps": [ { "step": "1", "check": "format", "result": "pass" | "fail" | "not run" }, … ] }
/// ```
struct VerifyReport: Encodable {
    /// One verification step and the error codes that mean it failed.
    struct Step {
        let label: String
        let name: String
        let codes: Set<AttestError.Code>
    }

    struct StepResult: Encodable {
        let step: String
        let check: String
        let result: String
    }

    let valid: Bool
    let kind: String
    var code: String?
    var reason: String?
    var environment: String?
    var publicKey: String?
    var keyId: String?
    var signCount: UInt32?
    var receiptLength: Int?
    var validationCategory: UInt32?
    var bundleVersion: String?
    var counter: UInt32?
    let steps: [StepResult]

    /// Statuses from the error: the step owning its code fails (the first step when none does),
    /// earlier steps pass, later ones did not run; all pass without an error.
    init(kind: String, steps: [Step], error: AttestError?) {
        self.kind = kind
        valid = error == nil
        code = error?.code.rawValue
        reason = error?.reason
        let failing = error.map { e in steps.firstIndex { $0.codes.contains(e.code) } ?? 0 } ?? steps.count
        self.steps = steps.indices.map { i in
            StepResult(step: steps[i].label, check: steps[i].name,
                       result: i < failing ? "pass" : i == failing ? "fail" : "not run")
        }
    }

    /// The exit status: 0 valid, 1 invalid.
    var exitStatus: Int32 { valid ? 0 : 1 }

    var human: String {
        var lines = ["\(kind): " + (code.map { "INVALID (\($0))" } ?? "VALID")]
        let rows = steps.map { [$0.step, $0.check, $0.result == "fail" ? "FAIL  \(reason ?? "")" : $0.result] }
        lines += Output.table(["step", "check", "result"], rows).split(separator: "\n").map { "  " + $0 }
        let facts: [(String, String?)] = [
            ("environment", environment), ("publicKey", publicKey), ("keyId", keyId),
            ("signCount", signCount.map(String.init)), ("receipt", receiptLength.map { "\($0) bytes" }),
            ("validationCategory", validationCategory.map(String.init)),
            ("bundleVersion", bundleVersion), ("counter", counter.map(String.init)),
        ]
        for case let (name, value?) in facts { lines.append("\(name): \(value)") }
        return lines.joined(separator: "\n")
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{\"valid\":false}" }
        return String(decoding: data, as: UTF8.self)
    }
}
