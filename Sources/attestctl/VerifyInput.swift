import AttestCore
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// The JSON object `attestctl verify` reads. Fields of both kinds; unknown fields are ignored.
///
/// ```
/// attestation: { "attestationObject": b64, "keyId": b64, "clientDataHash": b64,
///                "teamId": text, "bundleId": text, "environment": "production" | "development" | "both" }
/// assertion:   { "assertion": b64, "clientDataHash": b64, "publicKey": PEM | b64 of the 65-byte point,
///                "teamId": text, "bundleId": text, "previousCounter": uint32 }
/// ```
/// `b64` is base64 or base64url, padded or not.
struct VerifyInput: Decodable {
    var attestationObject: String?
    var keyId: String?
    var assertion: String?
    var clientDataHash: String?
    var publicKey: String?
    var teamId: String?
    var bundleId: String?
    var environment: String?
    /// A JSON number; read as a Double because JSONDecoder reports an out-of-range integer as
    /// "not valid JSON" without naming the field.
    var previousCounter: Double?

    /// Reads and decodes `path` (`-` for standard input).
    static func read(_ path: String) throws(CommandFailure) -> VerifyInput {
        let data = Data(try readFile(path, option: "--input"))
        do { return try JSONDecoder().decode(VerifyInput.self, from: data) } catch let error as DecodingError {
            throw CommandFailure(.input, describe(error))
        } catch {
            throw CommandFailure(.input, "input is not JSON: \(error)")
        }
    }

    /// A message naming the field a decoding error is about.
    static func describe(_ error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c): context = c
        case .keyNotFound(let key, _): return "field \"\(key.stringValue)\" is missing"
        @unknown default: return "input is not a verify object"
        }
        guard let field = context.codingPath.last?.stringValue else {
            return error.isTypeMismatch ? "input is not a JSON object" : "input is not JSON"
        }
        return field == "previousCounter"
            ? "field \"previousCounter\" must be a number" : "field \"\(field)\" must be a string"
    }

    /// A required text field.
    func text(_ value: String?, _ field: String) throws(CommandFailure) -> String {
        guard let value, !value.isEmpty else { throw CommandFailure(.input, "field \"\(field)\" is missing") }
        return value
    }

    /// A required binary field, base64 or base64url.
    func bytes(_ value: String?, _ field: String) throws(CommandFailure) -> [UInt8] {
        guard let bytes = Base64.decode(try text(value, field)) else {
            throw CommandFailure(.input, "field \"\(field)\" is not base64 or base64url")
        }
        return bytes
    }

    /// `TEAMID.bundleId` from the two fields.
    func appID() throws(CommandFailure) -> String {
        "\(try text(teamId, "teamId")).\(try text(bundleId, "bundleId"))"
    }

    /// `environment` as a policy.
    func policy() throws(CommandFailure) -> EnvironmentPolicy {
        let value = try text(environment, "environment")
        guard let policy = EnvironmentPolicy(rawValue: value) else {
            throw CommandFailure(.input,
                                 "field \"environment\" must be production, development or both, not \"\(value)\"")
        }
        return policy
    }

    /// `publicKey`: PEM SubjectPublicKeyInfo, or base64 of the 65-byte X9.62 point.
    func key() throws(CommandFailure) -> ECPublicKey {
        let value = try text(publicKey, "publicKey")
        if value.contains("-----BEGIN") {
            do { return try ECPublicKey(pemEncoded: value) } catch {
                throw CommandFailure(.input, "field \"publicKey\" is not a PEM EC public key: \(error.reason)")
            }
        }
        let point = try bytes(value, "publicKey")
        do { return try ECPublicKey(x962Point: point) } catch {
            throw CommandFailure(.input, "field \"publicKey\" is not a P-256 point: \(error.reason)")
        }
    }

    func counter() throws(CommandFailure) -> UInt32 {
        guard let previousCounter else { throw CommandFailure(.input, "field \"previousCounter\" is missing") }
        guard let counter = UInt32(exactly: previousCounter) else {
            throw CommandFailure(.input, "field \"previousCounter\" must be a whole number from 0 to 4294967295")
        }
        return counter
    }
}

/// The bytes of file `path` (`-` for standard input); the message names `option` and the
/// system's reason.
func readFile(_ path: String, option: String) throws(CommandFailure) -> [UInt8] {
    let fd = path == "-" ? 0 : open(path, O_RDONLY)
    guard fd >= 0 else {
        throw CommandFailure(.input, "cannot read \(option) \(path): \(String(cString: strerror(errno)))")
    }
    defer { if fd != 0 { close(fd) } }
    var out = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { continue }
        guard n >= 0 else {
            throw CommandFailure(.input, "cannot read \(option) \(path): \(String(cString: strerror(errno)))")
        }
        guard n > 0 else { return out }
        out += buffer[..<n]
    }
}

extension DecodingError {
    var isTypeMismatch: Bool {
        if case .typeMismatch = self { return true }
        return false
    }
}
