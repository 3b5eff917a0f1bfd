/// The one error type of attest-bench: a benchmark whose run went wrong (an in-process request
/// answered no token, say). Printed as `attest-bench: MESSAGE`, exit status 1; `file` and
/// `line` name the throwing site. Wrong arguments are `UsageError`s (CLISupport).
struct BenchError: Error, CustomStringConvertible {
    let message: String
    let file: String
    let line: Int

    init(_ message: String, file: String = #fileID, line: Int = #line) {
        self.message = message
        self.file = file
        self.line = line
    }

    var description: String { message }
}
