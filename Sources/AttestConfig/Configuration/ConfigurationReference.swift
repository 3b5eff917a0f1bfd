import AttestCore

/// docs/configuration.md, rendered from `ConfigurationKey.all`: one row per key with its
/// default, the values it takes and its documentation. `attestctl config reference` prints it;
/// `ConfigurationReferenceTests` fails while the file in the repository differs.
public enum ConfigurationReference {
    /// How to bring docs/configuration.md up to date, for the test's failure message.
    public static let regenerate = "swift build && .build/debug/attestctl config reference > docs/configuration.md"

    /// The whole document.
    public static func markdown() -> String {
        let defaults = Configuration()
        let initialised = Configuration.newDataDirectory
        var lines = [
            "# Configuration",
            "",
            "<!-- Generated from ConfigurationKey.all (Sources/AttestConfig/Configuration/ConfigurationKey.swift)",
            "     by `attestctl config reference`; edit the key's doc there, then: \(regenerate) -->",
            "",
            "`DATA/config.json` holds nested objects whose leaves are the dotted keys below, e.g.",
            "`{\"store\": {\"sync\": \"interval\"}}` for `store.sync`. Every key has a default and a file may set any",
            "subset; an unknown key or a bad value is refused at start with a message naming the key.",
            "`attestctl config show` prints every key's current value with the text below, and",
            "`attestctl config set KEY VALUE` checks a value (a bare word is taken as a string) before it",
            "replaces the file; restart or reload the pools to apply it.",
            "",
        ]
        let differing = ConfigurationKey.all.filter { $0.get(initialised) != $0.get(defaults) }
        if !differing.isEmpty {
            lines.append("`attestctl init` writes the defaults into a new data directory, except "
                         + differing.map { "`\($0.name)` = \(cell(defaultOf: $0, in: initialised))" }
                             .joined(separator: ", ")
                         + " (the default is what a config.json without the key means).")
            lines.append("")
        }
        lines.append("| key | default | values | meaning |")
        lines.append("|---|---|---|---|")
        for key in ConfigurationKey.all {
            let row = [cell(defaultOf: key, in: defaults), values(key.kind), escape(key.doc)]
            lines.append("| `\(key.name)` | " + row.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A key's value as the table shows it: text, booleans and `[]` in code spans, numbers and
    /// non-empty arrays as JSON.
    static func cell(defaultOf key: ConfigurationKey, in configuration: Configuration) -> String {
        let value = key.get(configuration)
        if let text = value.stringValue { return "`\(text)`" }
        if value.boolValue != nil || value.arrayValue?.isEmpty == true { return "`\(value.jsonText)`" }
        return value.jsonText
    }

    static func values(_ kind: ConfigurationKey.Kind) -> String {
        switch kind {
        case .integer(let range): "\(range.lowerBound)…\(range.upperBound)"
        case .integerChoice(let options): options.map { "`\($0)`" }.joined(separator: ", ")
        case .string: "text"
        case .optionalString: "text, may be empty"
        case .optionalHTTPSURL: "https:// URL, may be empty"
        case .choice(let options): options.map { "`\($0)`" }.joined(separator: ", ")
        case .bool: "`true`, `false`"
        case .stringList: "array of text"
        case .integerList(let range): "array of at most 16 in \(range.lowerBound)…\(range.upperBound)"
        }
    }

    /// A doc line as one table cell: characters markdown would read as table or markup escaped.
    static func escape(_ doc: String) -> String {
        var out = ""
        for c in doc {
            switch c {
            case "|", "*", "\\", "`", "<": out += "\\\(c)"
            case "\n": out += " "
            default: out.append(c)
            }
        }
        return out
    }
}
