/// The one error type of `AttestSupervisor` (`attestctl serve`).
///
/// `code` is stable and is what callers and tests compare: two errors are equal when their
/// codes are equal. `message` is what attestctl prints (`attestctl serve: MESSAGE`); `file` and
/// `line` name the throwing site.
package struct SupervisorError: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Code: String, Sendable, CaseIterable {
        /// A program could not be found or started, or did not come up (a pool, the sender, nginx).
        case start = "start"
        /// A log could not be opened or rotated.
        case logs = "logs"
        /// The nginx configuration could not be rendered: templates missing, or a value refused.
        case nginxSite = "nginx_site"
        /// The service user could not be resolved, created or handed the data directory.
        case serviceUser = "service_user"
    }

    package let code: Code
    package let message: String
    package let file: String
    package let line: Int

    package init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    package static func == (lhs: SupervisorError, rhs: SupervisorError) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    package var description: String { message }
}
