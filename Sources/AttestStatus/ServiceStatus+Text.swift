import AttestCore
import CLISupport

extension ServiceStatus {
    /// The screen `attestctl status` prints: a title line, then tables of the pools, the store
    /// maps and the organizations, and a line for webhooks. A dash is a number not known (no
    /// requests in the interval for p99, no limit). Names come from the answer's labels: a
    /// control character in one (an escape sequence) is shown as "?", never sent to the terminal.
    public func text(url: String) -> String {
        var title = "AttestEdge · \(url)"
        if hostTime.isFinite && abs(hostTime) < 1e12 {
            title += " · host clock \(Timestamp(seconds: Int64(hostTime.rounded(.down))).iso8601)"
        }
        title += " · rates over \(TextNumber.fixed(seconds, 1)) s"
        var sections = [title]
        sections.append(pools.isEmpty ? "no pools in the answer" : Output.table(
            ["POOL", "WORKERS", "RESTARTS", "REQ/S", "P99", "5XX/S", "4XX/S"],
            pools.map {
                [Self.shown($0.name), $0.workers.map(TextNumber.count) ?? "-", TextNumber.count($0.workerRestarts),
                 TextNumber.fixed($0.requestsPerSecond, 1), $0.p99.map(TextNumber.duration) ?? "-",
                 TextNumber.fixed($0.serverErrorsPerSecond, 1), TextNumber.fixed($0.clientErrorsPerSecond, 1)]
            }))
        sections.append(stores.isEmpty ? "STORE MAP  none in the answer (a PostgreSQL store has no map)" : Output.table(
            ["STORE MAP", "USED", "SIZE", "FULL"],
            stores.map {
                [Self.shown($0.environment), TextNumber.bytes($0.usedBytes), TextNumber.bytes($0.sizeBytes),
                 $0.percent.map(TextNumber.percent) ?? "-"]
            }))
        sections.append("WEBHOOKS  backlog \(TextNumber.count(webhooks.backlog)) · "
                        + "\(TextNumber.fixed(webhooks.attemptsPerSecond, 1)) attempts/s · "
                        + "\(TextNumber.fixed(webhooks.failuresPerSecond, 1)) failures/s · "
                        + "\(TextNumber.count(webhooks.failedAttempts)) failed attempts since the sender started")
        sections.append(organizations.isEmpty ? "no organizations" : Output.table(
            ["ORGANIZATION", "ACTIVE DEVICES", "LIMIT", "OF LIMIT"],
            organizations.map {
                [Self.shown($0.name), TextNumber.count($0.activeDevices), $0.limit.map(TextNumber.count) ?? "unlimited",
                 $0.percent.map(TextNumber.percent) ?? "-"]
            }))
        return sections.joined(separator: "\n\n")
    }

    /// `name` with each control character (C0, DEL, C1) replaced by "?".
    static func shown(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.map {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "?" : $0
        }))
    }
}
