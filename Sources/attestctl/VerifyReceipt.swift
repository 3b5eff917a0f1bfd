import AttestCore
import CLISupport

/// `attestctl verify receipt`: an App Attest receipt checked offline (`ReceiptVerifier`).
///
/// FILE holds the receipt as DER (CMS, starting 0x30) or as its base64 text (standard or URL
/// alphabet, padded or not, surrounding blanks ignored). `--json` prints one object:
/// ```
/// { "valid": bool, "type": "ATTEST" | "RECEIPT" | null, "appId": text | null,
///   "environment": "sandbox" | "production" | null, "createdAt": ISO 8601 | null,
///   "notBefore": ISO 8601 | null, "expiresAt": ISO 8601 | null, "riskMetric": n | null,
///   "credentialCertSha256": hex | null, "code": text, "reason": text }   ; code, reason when invalid
/// ```
/// Fields are those of the payload, and so null for a receipt that does not verify.
struct ReceiptReport {
    let receipt: AppAttestReceipt?
    let error: AttestError?

    var exitStatus: Int32 { receipt == nil ? 1 : 0 }

    private var fields: [(String, JSONValue)] {
        func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }
        return [
            ("type", receipt.map { .string($0.kind.rawValue) } ?? .null),
            ("appId", receipt.map { .string($0.appID) } ?? .null),
            ("environment", receipt?.environment.map { .string($0) } ?? .null),
            ("createdAt", time(receipt?.createdAt)), ("notBefore", time(receipt?.notBefore)),
            ("expiresAt", time(receipt?.expiresAt)),
            ("riskMetric", receipt?.riskMetric.map { .int(Int64($0)) } ?? .null),
            ("credentialCertSha256", receipt.map { .string(Hex.encode($0.credentialCertificateSHA256)) } ?? .null),
        ]
    }

    var json: String {
        var members: [(String, JSONValue)] = [("valid", .bool(receipt != nil))] + fields
        if let error { members += [("code", .string(error.code.rawValue)), ("reason", .string(error.reason))] }
        return JSONValue.object(members).jsonText
    }

    var human: String {
        var lines = ["receipt: " + (error.map { "INVALID (\($0.code.rawValue))  \($0.reason)" } ?? "VALID")]
        guard receipt != nil else { return lines.joined(separator: "\n") }
        let rows = fields.map { name, value -> [String] in
            switch value {
            case .string(let text): [name, text]
            case .int(let n): [name, String(n)]
            default: [name, "-"]
            }
        }
        lines += Output.table(["field", "value"], rows).split(separator: "\n").map { "  " + $0 }
        return lines.joined(separator: "\n")
    }
}

/// The receipt in `bytes`: DER as it is, or decoded from base64 text; throws `.input` otherwise.
func receiptBytes(_ bytes: [UInt8], path: String) throws(CommandFailure) -> [UInt8] {
    if bytes.first == 0x30 { return bytes }
    let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
    guard !text.isEmpty else { throw CommandFailure(.input, "\(path) is empty") }
    let standard = text.replacingAll("-", with: "+").replacingAll("_", with: "/")
    let padded = standard + String(repeating: "=", count: (4 - standard.count % 4) % 4)
    guard let der = Base64.decode(padded), der.first == 0x30 else {
        throw CommandFailure(.input, "\(path) is neither a DER receipt (CMS, starting 0x30) nor its base64 text")
    }
    return der
}

/// Verifies the receipt in FILE at `time` against `anchor` (Apple Root CA - G3 unless given).
func verifyReceipt(path: String, at time: Timestamp, trustRoots: [String]) throws(CommandFailure) -> ReceiptReport {
    let der = try receiptBytes(readFile(path, option: "--input"), path: path)
    let verifier: ReceiptVerifier
    do {
        if trustRoots.isEmpty {
            verifier = try .apple()
        } else {
            var anchors = [Certificate]()
            for root in trustRoots {
                let pem = String(decoding: try readFile(root, option: "--trust-root"), as: UTF8.self)
                anchors += try Certificate.certificates(pemEncoded: pem)
            }
            guard anchors.count == 1 else {
                throw CommandFailure(.input, "--trust-root: a receipt has one anchor; give one certificate")
            }
            verifier = try ReceiptVerifier(anchor: anchors[0])
        }
    } catch let error as CommandFailure {
        throw error
    } catch {
        throw CommandFailure(.input, "trust anchor: \(error)")
    }
    do {
        return ReceiptReport(receipt: try verifier.verify(der, at: time), error: nil)
    } catch {
        return ReceiptReport(receipt: nil, error: error)
    }
}
