import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport

/// The data directory: `--data DIR`, else `$ATTEST_EDGE_DATA`, else `./var`.
func dataDirectory(_ args: Arguments) -> DataDirectory { DataDirectory(flag: args.value("data")) }

/// The configuration and store of an initialised data directory.
func openStore(_ data: DataDirectory) throws -> (Configuration, Store) {
    let config = try data.loadConfiguration()
    let store = try Store(directory: data.storeDirectory, options: config.storeOptions)
    if let notice = store.ephemeralResetNotice { Output.err("attestctl: note: \(notice)") }
    return (config, store)
}

func now() -> Timestamp { SystemClock().now() }

/// Parses a subcommand word (`org add …`): returns it and the arguments after it.
func subcommand(_ argv: [String], _ choices: [String]) throws -> (String, [String]) {
    guard let word = argv.first, choices.contains(word) else {
        throw UsageError(argv.first.map { "unknown subcommand '\($0)'" }
                             ?? "missing subcommand (\(choices.joined(separator: ", ")))")
    }
    return (word, Array(argv.dropFirst()))
}
