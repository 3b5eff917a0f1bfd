import CLISupport

/// `attestctl status [--data DIR] [--url URL] [--watch [SECONDS]] [--json]`, parsed.
/// `--watch` takes an optional interval: `--watch`, `--watch 5` and `--watch=5` all work.
public struct StatusOptions: Sendable, Equatable {
    public var data: String?
    public var url: String?
    /// Nil: one screen, its rates over `oneShotSeconds`.
    public var watchSeconds: Int?
    public var json: Bool

    /// The interval of a single `attestctl status` (no `--watch`).
    public static let oneShotSeconds = 1
    public static let defaultWatchSeconds = 2
    public static let watchRange = 1...3600

    public init(data: String? = nil, url: String? = nil, watchSeconds: Int? = nil, json: Bool = false) {
        self.data = data
        self.url = url
        self.watchSeconds = watchSeconds
        self.json = json
    }

    public init(_ argv: [String]) throws(UsageError) {
        var normalised = [String]()
        var i = 0
        while i < argv.count {
            if argv[i] == "--watch" {
                let next = i + 1 < argv.count ? argv[i + 1] : ""
                if !next.isEmpty && next.allSatisfy({ ("0"..."9").contains($0) }) {
                    normalised.append("--watch=" + next)
                    i += 2
                    continue
                }
                normalised.append("--watch=\(Self.defaultWatchSeconds)")
            } else {
                normalised.append(argv[i])
            }
            i += 1
        }
        let args = try Arguments(normalised, valued: ["data", "url", "watch"], switches: ["json"])
        guard args.positionals.isEmpty else { throw UsageError("unexpected argument '\(args.positionals[0])'") }
        data = args.value("data")
        if let given = args.value("url") { url = try MetricsURL.checked(given) } else { url = nil }
        watchSeconds = args.value("watch") == nil
            ? nil : try args.int("watch", default: Self.defaultWatchSeconds, in: Self.watchRange)
        json = args.flag("json")
    }
}
