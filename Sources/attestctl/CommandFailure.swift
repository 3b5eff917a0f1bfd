/// The one error type of attestctl: a failure the user can act on, printed as
/// `attestctl CMD: MESSAGE` (exit status 1; `input`, from `verify`: status 2).
///
/// `code` is stable and is what callers and tests compare: two failures are equal when their
/// codes are equal. `file` and `line` name the throwing site.
struct CommandFailure: Error, Hashable, CustomStringConvertible {
    enum Code: String, CaseIterable {
        /// What the command names does not exist (an organization, an app, a device, a pool).
        case notFound = "not_found"
        /// It exists or was done already (an organization, an app, a revoked key).
        case already = "already"
        /// Input `verify` cannot verify at all: a missing field, bad base64, an unreadable file.
        case input = "input"
        /// Anything else the command refused or could not do.
        case failed = "failed"
    }

    let code: Code
    let message: String
    let file: String
    let line: Int

    init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    static func == (lhs: CommandFailure, rhs: CommandFailure) -> Bool { lhs.code == rhs.code }
    func hash(into hasher: inout Hasher) { hasher.combine(code) }

    var description: String { message }
}
