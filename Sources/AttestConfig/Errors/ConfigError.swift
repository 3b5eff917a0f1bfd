#if canImport(Glibc)
import Glibc
#endif

/// The one error type of `AttestConfig`: the configuration, the data directory's files, the
/// key ring.
///
/// `code` is stable and is what callers and tests compare: two errors are equal when their
/// codes are equal. `message` is what a program prints (`attestctl CMD: MESSAGE`, a pool's
/// start-up line); `file` and `line` name the throwing site.
public struct ConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// config.json or a setting is refused: not JSON, an unknown key, a value of the wrong
        /// kind or out of range (`Configuration.Problem`).
        case invalid = "invalid"
        /// The data directory lacks what it must hold (never initialised: no config.json or
        /// challenge secret), or a trust root it names does not exist.
        case missing = "missing"
        /// A file-system call failed; `errorNumber` is its `errno`.
        case fileSystem = "file_system"
        /// A file was refused before anything was read or written through it: a symbolic link,
        /// not a regular file, more than one link, too large (`EFBIG`), a path that climbs out.
        case refused = "refused"
        /// The signing keys: none signs now, the active one's file is gone, index.json is
        /// malformed, keys/lock cannot be taken (the service answers 503, `ServiceError.unexpected`).
        case keyRing = "key_ring"
    }

    public let code: Code
    public let message: String
    /// The `errno` of the failed call (`fileSystem`; `ELOOP` and `EFBIG` for those refusals); 0 otherwise.
    public let errorNumber: Int32
    public let file: String
    public let line: Int

    public init(_ code: Code, _ message: String, errorNumber: Int32 = 0, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.errorNumber = errorNumber
        self.file = file
        self.line = line
    }

    /// A refused config.json or setting (`Configuration.Problem(message:)`): code `invalid`.
    public init(message: String, file: String = #fileID, line: Int = #line) {
        self.init(.invalid, message, file: file, line: line)
    }

    /// The call that just failed on `path`, from `errno`: "WHAT PATH: strerror".
    public static func failed(_ what: String, _ path: String, file: String = #fileID,
                              line: Int = #line) -> ConfigError {
        let number = errno
        return ConfigError(.fileSystem, "\(what) \(path): \(String(cString: strerror(number)))", errorNumber: number,
                           file: file, line: line)
    }

    public static func == (lhs: ConfigError, rhs: ConfigError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { message }
}
