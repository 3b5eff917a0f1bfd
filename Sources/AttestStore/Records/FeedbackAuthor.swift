import AttestCore

/// Who wrote a feature request, vote, comment, ticket or message: the one thing that grants
/// access to it (reading a ticket, removing a vote). The client's own ids (`submitterId`,
/// `voterId`, `authorId`) are stored beside it as strings and never grant anything.
///
/// 17 bytes wherever it is stored (keys and records):
/// ```
/// kind u8 ‖ digest (16)
/// 1 device   LineageKey.digest: the attested device's lineage
/// 2 apiKey   SHA-256("attestedge-feedback-key:" ‖ keyID ‖ 0x00 ‖ clientID)[0..<16]
///            (simulator builds share one key: the client-claimed id tells their users apart)
/// 3 admin    16 zero bytes (the CLI and the org API's replies)
/// 4 subject  SHA-256("attestedge-feedback-subject:" ‖ org ‖ 0x00 ‖ subjectID)[0..<16]: only in
///            `tickets_by_author`, the entry that lets the devices verifiably linked to the
///            opener's subject read a ticket (never the author of a record)
/// ```
public enum FeedbackAuthor: Hashable, Sendable, CustomStringConvertible {
    case device(lineageDigest: [UInt8])
    case apiKey(digest: [UInt8])
    case admin
    case subject(digest: [UInt8])

    /// The bytes of an author in keys and records.
    public static let byteCount = 17

    /// The author of a device's writes: its lineage.
    public static func device(_ lineage: LineageKey) -> FeedbackAuthor { .device(lineageDigest: lineage.digest) }

    /// The author of an API-key caller's writes: the key and the client id it claims.
    public static func apiKey(keyID: String, clientID: String) -> FeedbackAuthor {
        .apiKey(digest: Array(SHA256.hash(Array("attestedge-feedback-key:".utf8) + Array(keyID.utf8) + [0],
                                          Array(clientID.utf8)).prefix(16)))
    }

    /// The index entry of a subject: every device verifiably linked to it (policy `signed` or
    /// `operator`) reads the tickets listed under it.
    public static func subject(org: String, subjectID: String) -> FeedbackAuthor {
        .subject(digest: Array(SHA256.hash(Array("attestedge-feedback-subject:".utf8) + Array(org.utf8) + [0],
                                           Array(subjectID.utf8)).prefix(16)))
    }

    var kind: UInt8 {
        switch self {
        case .device: return 1
        case .apiKey: return 2
        case .admin: return 3
        case .subject: return 4
        }
    }

    /// `kind ‖ digest`. - Throws: `StoreError(.invalidKey)` for a digest that is not 16 bytes.
    public func bytes() throws -> [UInt8] {
        switch self {
        case .device(let digest), .apiKey(let digest), .subject(let digest):
            guard digest.count == 16 else {
                throw StoreError(.invalidKey, "a feedback author digest of \(digest.count) bytes, not 16")
            }
            return [kind] + digest
        case .admin:
            return [kind] + [UInt8](repeating: 0, count: 16)
        }
    }

    /// Reads the 17 bytes of `bytes()`. - Throws: `StoreError(.corrupt)` for another length,
    /// an unknown kind or an admin with a digest.
    public init<C: Collection>(bytes: C) throws where C.Element == UInt8 {
        guard bytes.count == Self.byteCount, let kind = bytes.first else {
            throw StoreError(.corrupt, "a feedback author of \(bytes.count) bytes, not \(Self.byteCount)")
        }
        let digest = Array(bytes.dropFirst())
        switch kind {
        case 1: self = .device(lineageDigest: digest)
        case 2: self = .apiKey(digest: digest)
        case 3:
            guard digest.allSatisfy({ $0 == 0 }) else { throw StoreError(.corrupt, "an admin author with a digest") }
            self = .admin
        case 4: self = .subject(digest: digest)
        default: throw StoreError(.corrupt, "feedback author kind \(kind)")
        }
    }

    public var description: String {
        switch self {
        case .device(let digest): return "device:" + Hex.encode(digest)
        case .apiKey(let digest): return "apiKey:" + Hex.encode(digest)
        case .admin: return "admin"
        case .subject(let digest): return "subject:" + Hex.encode(digest)
        }
    }
}

/// Who a comment or ticket message is shown as from (the SDK's `authorType`). Stored as u8.
public enum FeedbackAuthorType: UInt8, Sendable, CaseIterable {
    case user = 0, admin = 1

    public var name: String { String(describing: self) }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    init(code: UInt8) throws {
        guard let found = Self(rawValue: code) else { throw StoreError(.corrupt, "feedback author type \(code)") }
        self = found
    }
}

extension BinaryWriter {
    /// An author as a record holds it: `bytes` (u32 17 ‖ kind ‖ digest). The transactions
    /// refuse an author whose digest is not 16 bytes before encoding.
    mutating func author(_ author: FeedbackAuthor) {
        data((try? author.bytes()) ?? [])
    }

    /// An optional string: "" is none.
    mutating func optionalString(_ v: String?) { string(v ?? "") }
}

extension BinaryReader {
    mutating func author() throws -> FeedbackAuthor { try FeedbackAuthor(bytes: try data()) }

    mutating func optionalString() throws -> String? {
        let s = try string()
        return s.isEmpty ? nil : s
    }
}
