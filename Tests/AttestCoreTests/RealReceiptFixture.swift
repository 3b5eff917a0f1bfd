import AttestCore
import Foundation
import Testing

/// A receipt Apple signed, from `Tests/Fixtures/Receipts/receipts.json` (sources and licences in
/// the repository's NOTICE): the receipt, the time it was recorded at, the key it is about, the
/// validity of the certificate that signed it, and the fields its source states.
///
/// ```
/// { "receipts": [ { "name", "source": {"repository", "path", "commit", "entry", "license"}, "note",
///     "recordedAt", "teamId", "bundleId", "keyId_b64", "publicKey_spki_b64" (or null),
///     "signingCertificate": {"notBefore", "notAfter"},
///     "expected": {"type", "appId", "environment", "createdAt", "notBefore", "expiresAt",
///                  "riskMetric", "clientHash_b64", "token"},
///     "receipt_b64" | "attestationVector" (a vector file whose attestation carries it) } ] }
/// ```
struct RealReceiptFixture: Decodable, Sendable, CustomTestStringConvertible {
    struct Source: Decodable, Sendable {
        let repository: String
        let path: String
        let commit: String?
        let license: String
    }
    struct Validity: Decodable, Sendable { let notBefore: String; let notAfter: String }
    struct Expected: Decodable, Sendable {
        let type: String
        let appId: String
        let environment: String
        let createdAt: String
        let notBefore: String?
        let expiresAt: String
        let riskMetric: Int?
        let clientHash_b64: String
        let token: String
    }
    let name: String
    let source: Source
    let recordedAt: String
    let teamId: String
    let bundleId: String
    let keyId_b64: String
    let publicKey_spki_b64: String?
    let signingCertificate: Validity
    let expected: Expected
    let receipt_b64: String?
    let attestationVector: String?

    var testDescription: String { name }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/Receipts").standardizedFileURL

    /// Every fixture; a file that does not load is a broken fixture, not a test result.
    static let all: [RealReceiptFixture] = {
        struct File: Decodable { let receipts: [RealReceiptFixture] }
        do {
            let data = try Data(contentsOf: directory.appendingPathComponent("receipts.json"))
            return try JSONDecoder().decode(File.self, from: data).receipts
        } catch {
            fatalError("receipt fixtures: \(error)")
        }
    }()

    /// The receipt's bytes: as given, or `attStmt.receipt` of the named vector's attestation.
    var receipt: [UInt8] {
        if let receipt_b64 { return Vectors.bytes(receipt_b64, name) }
        guard let attestationVector else { fatalError("fixture \(name) has no receipt") }
        let vector: AppleGuideVector = Vectors.loadOrFail(attestationVector)
        do {
            let object = try AttestationObject(cborEncoded: Vectors.bytes(vector.attestationObject_b64)[...])
            return Array(object.receipt)
        } catch {
            fatalError("fixture \(name): \(error)")
        }
    }

    /// An ISO 8601 text of the fixture that must parse.
    static func time(_ text: String) -> Timestamp {
        guard let time = Timestamp(iso8601: text) else { fatalError("fixture time \(text) does not parse") }
        return time
    }

    var recorded: Timestamp { Self.time(recordedAt) }
    var created: Timestamp { Self.time(expected.createdAt) }
    var signerNotBefore: Timestamp { Self.time(signingCertificate.notBefore) }
    var signerNotAfter: Timestamp { Self.time(signingCertificate.notAfter) }
}
