import CLISupport

/// One `attestctl` subcommand.
struct Command: Sendable {
    /// The word after `attestctl`.
    let name: String
    /// One line for the command list.
    let summary: String
    /// Full usage text.
    let usage: String
    /// Runs with the arguments after the command word; returns the exit status.
    let run: @Sendable ([String]) throws -> Int32
}

/// Dispatches `argv` to a command; prints usage on `help`, unknown commands or `UsageError`.
func runCommand(_ argv: [String], commands: [Command], program: String) -> Int32 {
    func overview() -> String {
        let width = commands.map { $0.name.count }.max() ?? 0
        return "usage: \(program) <command> [options]\n\ncommands:\n"
            + commands.map { "  \(Output.pad($0.name, width))  \($0.summary)" }.joined(separator: "\n")
            + "\n\nRun '\(program) help <command>' for a command's options."
    }
    let helpWords: Set<String> = ["help", "--help", "-h"]
    guard let word = argv.first else {
        Output.err(overview())
        return 2
    }
    if helpWords.contains(word) {
        guard argv.count > 1 else { Output.out(overview()); return 0 }
        guard let command = commands.first(where: { $0.name == argv[1] }) else {
            Output.err("\(program): unknown command '\(argv[1])'\n\n" + overview())
            return 2
        }
        Output.out(command.usage)
        return 0
    }
    guard let command = commands.first(where: { $0.name == word }) else {
        Output.err("\(program): unknown command '\(word)'\n\n" + overview())
        return 2
    }
    let rest = Array(argv.dropFirst())
    if rest.contains("--help") || rest.contains("-h") {
        Output.out(command.usage)
        return 0
    }
    do {
        return try command.run(rest)
    } catch let error as UsageError {
        Output.err("\(program) \(command.name): \(error.message)\n\n\(command.usage)")
        return 2
    } catch {
        Output.err("\(program) \(command.name): \(error)")
        return 1
    }
}
