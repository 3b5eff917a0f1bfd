import AttestCore

/// The checks every feature-request and ticket body passes before anything is read or stored;
/// each failure is 400 `bad_request` whose message names the field and which adds
/// `"field": "<name>"` to the envelope.
///
/// ```
/// text (trimmed of white space, counted in Characters)   single line?
///   title 3…200, subject 3…200                            yes: no control characters
///   description 10…5,000, comment body 1…2,000,           no: \t \n \r allowed, no other
///   ticket body / message body 1…5,000                        control characters (NUL included)
/// client ids: submitterId, voterId, authorId, deviceHash  ≤128 bytes, no control characters
/// pushToken        ≤256 bytes of hex digits (spaces, < and > allowed, as APNs tokens print)
/// pushEnvironment  ≤32 bytes of [A-Za-z0-9_-]
/// submitterEmail   ≤254 bytes with one @, no control characters or spaces
/// ```
/// An absent or null optional field is nil; "" is nil for the push fields and the email.
enum FeedbackInput {
    /// A text field's Character bounds and whether it is one line.
    struct Text {
        let name: String
        let bounds: ClosedRange<Int>
        let singleLine: Bool

        static let title = Text(name: "title", bounds: 3...200, singleLine: true)
        static let description = Text(name: "description", bounds: 10...5_000, singleLine: false)
        static let comment = Text(name: "body", bounds: 1...2_000, singleLine: false)
        static let subject = Text(name: "subject", bounds: 3...200, singleLine: true)
        static let ticketBody = Text(name: "body", bounds: 1...5_000, singleLine: false)
    }

    static let clientIDBytes = 128, pushTokenBytes = 256, pushEnvironmentBytes = 32, emailBytes = 254

    static func invalid(_ field: String, _ message: String) -> ServiceError {
        ServiceError(.badRequest, message, extra: [("field", .string(field))])
    }

    /// The trimmed text of a required field within its bounds.
    static func text(_ body: JSONBody, _ spec: Text) throws -> String {
        guard let raw = try string(body, spec.name) else {
            throw invalid(spec.name, "The field \(spec.name) is required.")
        }
        return try text(raw, spec)
    }

    /// `raw` trimmed and checked against `spec` (the CLI's and the org API's admin text too).
    static func text(_ raw: String, _ spec: Text) throws -> String {
        let trimmed = trim(raw)
        for scalar in trimmed.unicodeScalars where isControl(scalar) {
            if spec.singleLine || !["\t", "\n", "\r"].contains(scalar) {
                throw invalid(spec.name, "The field \(spec.name) may not contain control characters.")
            }
        }
        let count = trimmed.count
        guard spec.bounds.contains(count) else {
            throw invalid(spec.name, "The field \(spec.name) must be \(spec.bounds.lowerBound) to "
                                     + "\(spec.bounds.upperBound) characters; it has \(count).")
        }
        return trimmed
    }

    /// A client-claimed id (stored only, never trusted): "" when absent.
    static func clientID(_ body: JSONBody, _ name: String) throws -> String {
        let value = try string(body, name) ?? ""
        guard value.utf8.count <= clientIDBytes else {
            throw invalid(name, "The field \(name) may be at most \(clientIDBytes) bytes.")
        }
        guard !value.unicodeScalars.contains(where: isControl) else {
            throw invalid(name, "The field \(name) may not contain control characters.")
        }
        return value
    }

    /// The push fields the SDK sends with a request or comment (both nil when it has no token).
    static func push(_ body: JSONBody) throws -> (token: String?, environment: String?) {
        let token = try string(body, "pushToken").flatMap { $0.isEmpty ? nil : $0 }
        let environment = try string(body, "pushEnvironment").flatMap { $0.isEmpty ? nil : $0 }
        if let token {
            let hexish = token.utf8.allSatisfy { Hex.digit($0) || $0 == 0x20 || $0 == 0x3C || $0 == 0x3E }
            guard token.utf8.count <= pushTokenBytes, hexish else {
                throw invalid("pushToken", "The field pushToken must be at most \(pushTokenBytes) hex digits.")
            }
        }
        if let environment {
            let name = environment.utf8.allSatisfy { Hex.isNameByte($0) }
            guard environment.utf8.count <= pushEnvironmentBytes, name else {
                throw invalid("pushEnvironment", "The field pushEnvironment must be at most "
                                                 + "\(pushEnvironmentBytes) letters, digits, _ or -.")
            }
        }
        return (token, environment)
    }

    /// `submitterEmail`, nil when absent or "".
    static func email(_ body: JSONBody) throws -> String? {
        guard let email = try string(body, "submitterEmail"), !email.isEmpty else { return nil }
        let ats = email.utf8.filter { $0 == UInt8(ascii: "@") }.count
        guard email.utf8.count <= emailBytes, ats == 1,
              !email.unicodeScalars.contains(where: { isControl($0) || $0 == " " }) else {
            throw invalid("submitterEmail", "The field submitterEmail must be an email address of at most "
                                            + "\(emailBytes) bytes.")
        }
        return email
    }

    /// A string member (400 naming it when it is another type).
    private static func string(_ body: JSONBody, _ name: String) throws -> String? {
        do { return try body.string(name) } catch {
            throw invalid(name, "The field \(name) must be a string.")
        }
    }

    static func isControl(_ s: Unicode.Scalar) -> Bool {
        s.value < 0x20 || (0x7F...0x9F).contains(s.value) || s.value == 0x2028 || s.value == 0x2029
    }

    /// `text` without leading and trailing white space (Unicode's, newlines included).
    static func trim(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}

extension Hex {
    /// `[0-9A-Fa-f]`.
    static func digit(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
    }

    /// `[A-Za-z0-9_-]`.
    static func isNameByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x5F || b == 0x2D
    }
}
