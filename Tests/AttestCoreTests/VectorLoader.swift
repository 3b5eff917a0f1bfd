import AttestCore
import Foundation

/// Loads JSON test vectors from `Tests/AttestCoreTests/Vectors` by file name.
enum Vectors {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")

    static func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try JSONDecoder().decode(T.self, from: data)
    }

    /// Base64 that must decode: a vector that does not is a broken vector, not a test result.
    static func bytes(_ b64: String, _ field: String = #function) -> [UInt8] {
        guard let bytes = Base64.decode(b64) else { fatalError("vector field \(field) is not base64") }
        return bytes
    }
}

/// `vectors/apple-guide-2026.json`: Apple's validation guide sample with every intermediate value.
struct AppleGuideVector: Decodable {
    struct Expected: Decodable {
        struct Extensions: Decodable {
            let apple_validation_category_01_uint32: UInt32
            let apple_bundle_version_01: String
        }
        let leafCertificate_b64: String
        let intermediateCertificate_b64: String
        let authDataPlusClientDataHash_b64: String
        let nonce_b64: String
        let credCertNonceOctetString_b64: String
        let credCertPublicKeySha256_b64: String
        let appIdSha256_b64: String
        let rpIdHash_b64: String
        let counter: UInt32
        let aaguid_hex: String
        let credentialId_b64: String
        let extensions: Extensions
    }
    struct Validity: Decodable { let notBefore: String; let notAfter: String }
    let teamId: String
    let bundleId: String
    let appId: String
    let environment: String
    let serverChallenge: String
    let clientDataHash_b64: String
    let keyId_b64: String
    let attestationObject_b64: String
    let verifyAt: String
    let leafValidity: Validity
    let expected: Expected

    static func load() throws -> AppleGuideVector { try Vectors.load("apple-guide-2026.json") }
}

extension Vectors {
    /// A vector file that must load: used where a parameterised test's arguments are built.
    static func loadOrFail<T: Decodable>(_ name: String, as type: T.Type = T.self) -> T {
        do { return try load(name) } catch { fatalError("vector file \(name): \(error)") }
    }

    /// Hex that must decode: a vector that does not is a broken vector.
    static func hex(_ text: String) -> [UInt8] {
        guard let bytes = Hex.decode(text) else { fatalError("vector hex \(text) is not hex") }
        return bytes
    }
}

