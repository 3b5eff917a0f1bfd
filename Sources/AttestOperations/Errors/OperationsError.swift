/// The one error type of `AttestOperations`.
///
/// `code` is stable and is what callers and tests compare: two errors are equal when their
/// codes are equal. `message` is what attestctl prints (`attestctl COMMAND: MESSAGE`); `file`
/// and `line` name the throwing site.
public struct OperationsError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// A file of a backup or restore could not be created, read, written, synced or renamed.
        case backupIO = "backup_io"
        /// A backup file is not one, is damaged or truncated, or holds what this build cannot restore.
        case backupInvalid = "backup_invalid"
        /// Root could not take the identity of the data directory's owner (`asDataOwner`).
        case dataOwner = "data_owner"
    }

    public let code: Code
    public let message: String
    public let file: String
    public let line: Int

    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    public static func == (lhs: OperationsError, rhs: OperationsError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { message }
}
