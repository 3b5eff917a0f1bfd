/// Command-line arguments for the project's tools: positionals, `--name value` options
/// (repeatable), `--flag` switches and `--name=value`.
///
/// Unknown options are errors, so a typo never silently changes behaviour.
public struct Arguments: Sendable {
    public private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `argv` (without the program name). `valued` names options that take a value,
    /// `switches` those that do not; anything else starting with `--` is an error.
    public init(_ argv: [String], valued: Set<String>, switches: Set<String> = []) throws(UsageError) {
        var i = 0
        while i < argv.count {
            let arg = argv[i]
            i += 1
            guard arg.hasPrefix("--"), arg.count > 2 else {
                if arg == "--" { positionals += argv[i...]; break }
                positionals.append(arg)
                continue
            }
            var name = String(arg.dropFirst(2))
            var inline: String? = nil
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if valued.contains(name) {
                if let inline {
                    options[name, default: []].append(inline)
                } else {
                    guard i < argv.count else { throw UsageError("--\(name) needs a value") }
                    options[name, default: []].append(argv[i])
                    i += 1
                }
            } else if switches.contains(name), inline == nil {
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    /// The last value given for `--name`.
    public func value(_ name: String) -> String? { options[name]?.last }
    /// Every value given for a repeatable `--name`.
    public func values(_ name: String) -> [String] { options[name] ?? [] }
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// `--name` as an integer in `range`, or `defaultValue` when absent.
    public func int(_ name: String, default defaultValue: Int,
                    in range: ClosedRange<Int> = 0...Int.max) throws(UsageError) -> Int {
        guard let text = value(name) else { return defaultValue }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError("--\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound), "
                                 + "got \"\(text)\"")
        }
        return n
    }

    /// The positional at `index`, or a usage error naming what is missing.
    public func positional(_ index: Int, _ what: String) throws(UsageError) -> String {
        guard index < positionals.count else { throw UsageError("missing \(what)") }
        return positionals[index]
    }
}

/// A mistake in how a tool was invoked: printed with the usage text, exit status 2.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
