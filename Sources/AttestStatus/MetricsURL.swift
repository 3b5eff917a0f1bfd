import AttestConfig
import CLISupport

/// Where `attestctl status` scrapes: `--url`, or `http://` + the data directory's
/// `server.metricsListen` + `/metrics`.
public enum MetricsURL {
    /// The URL of the metrics listener `listen`. A wildcard address (`*`, `0.0.0.0`, `[::]`)
    /// is reached on loopback (127.0.0.1, [::1]).
    public static func of(_ listen: ListenAddress) -> String { listen.localURL(path: "/metrics") }

    /// The longest `--url` taken.
    static let maximumLength = 2048

    /// `--url` as given, when it is an http or https URL with no blank or control character.
    public static func checked(_ url: String) throws(UsageError) -> String {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.utf8.count <= maximumLength,
              url.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw UsageError("--url must be an http:// or https:// URL with no blank, got \(url.debugDescription)")
        }
        return url
    }
}
