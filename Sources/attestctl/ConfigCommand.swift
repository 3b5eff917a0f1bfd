import AttestConfig
import AttestCore
import AttestService
import CLISupport

/// `attestctl config show|set|reference`.
let configCommand = Command(
    name: "config",
    summary: "show the configuration (every key, documented) or set one key",
    usage: """
        usage: attestctl config show [--json] [--data DIR]
               attestctl config set KEY VALUE [--data DIR]
               attestctl config reference

        KEY is dotted (store.sync, tokens.lifetimeSeconds…); VALUE is JSON (a bare word is taken
        as a string). The file is validated before it is replaced; restart the pools to apply.
        reference prints every key's default and documentation as markdown (docs/configuration.md).

        example: attestctl config set store.sync interval
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["show", "set", "reference"])
        if sub == "reference" {
            let args = try Arguments(rest, valued: [], switches: [])
            guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
            Output.out(ConfigurationReference.markdown())  // ends with a newline: none is added
            return 0
        }
        let args = try Arguments(rest, valued: ["data"], switches: ["json"])
        let data = dataDirectory(args)
        var config = try data.loadConfiguration()
        if sub == "show" {
            if args.flag("json") {
                Output.out(config.json.prettyJSONText)
            } else {
                Output.out("# \(data.configFile)")
                for key in ConfigurationKey.all {
                    Output.out("\(key.name) = \(key.currentText(config))\n    \(key.doc)")
                }
            }
            return 0
        }
        let name = try args.positional(0, "KEY")
        let value = try args.positional(1, "VALUE")
        do { try config.set(name, jsonValue: value) } catch { throw CommandFailure(.failed, "\(error)") }
        try data.save(config)
        Output.out("\(name) = \(ConfigurationKey.named(name)!.currentText(config))  (restart the pools to apply)")
        return 0
    })

extension ConfigurationKey {
    func currentText(_ config: Configuration) -> String {
        config.json.lookup(name)?.jsonText ?? "?"
    }
}

extension JSONValue {
    /// The value at a dotted path of nested objects.
    func lookup(_ dotted: String) -> JSONValue? {
        var current: JSONValue? = self
        for part in dotted.split(separator: ".") { current = current?[String(part)] }
        return current
    }
}
