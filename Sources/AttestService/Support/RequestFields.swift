import AttestCore

/// The members of a JSON request body, with the decoding rules every endpoint shares.
///
/// Bodies are one JSON object whose member names are unique; members are strings (unknown
/// members are ignored). Optional
/// text that is blank counts as absent. Binary members are base64 or base64url, padded or not.
struct RequestFields {
    private let members: [(String, JSONValue)]
    /// Far above the 13 members a device request has; bounds the duplicate-name check.
    static let maximumMembers = 64

    init(body: [UInt8]) throws(ServiceError) {
        let value: JSONValue
        do { value = try JSONParser.parse(body, limits: .init()) } catch {
            throw ServiceError(.badRequest, "The request body must be a JSON object.", log: error.reason)
        }
        guard let members = value.objectValue else {
            throw ServiceError(.badRequest, "The request body must be a JSON object.")
        }
        guard members.count <= Self.maximumMembers else {
            throw ServiceError(.badRequest, "The request body has more than \(Self.maximumMembers) members.")
        }
        // Parsers disagree on which of two equal names wins: refuse the ambiguity.
        for (i, member) in members.enumerated() where members[..<i].contains(where: { $0.0 == member.0 }) {
            throw ServiceError(.badRequest, "The field \(member.0) appears more than once.")
        }
        self.members = members
    }

    /// A string member; `nil` when absent or `null`. A member of another type is a 400.
    func string(_ name: String) throws(ServiceError) -> String? {
        guard let value = members.first(where: { $0.0 == name })?.1, !value.isNull else { return nil }
        guard let text = value.stringValue else {
            throw ServiceError(.badRequest, "The field \(name) must be a string.")
        }
        return text
    }

    /// An optional text member; blank (empty or white space) counts as absent. Longer than
    /// its documented limit (`FieldLimits.maximumBytes`) is a 400 naming the field.
    func optionalText(_ name: String) throws(ServiceError) -> String? {
        guard let text = try string(name), text.contains(where: { !$0.isWhitespace }) else { return nil }
        let limit = FieldLimits.maximumBytes(name)
        guard text.utf8.count <= limit else {
            throw ServiceError(.badRequest, "The field \(name) is longer than \(limit) bytes.")
        }
        return text
    }

    /// Decodes base64 of exactly `count` bytes (any count when `nil`).
    static func base64(_ text: String, count: Int? = nil) -> [UInt8]? {
        guard let bytes = Base64.decode(text), count.map({ bytes.count == $0 }) ?? !bytes.isEmpty else { return nil }
        return bytes
    }
}
