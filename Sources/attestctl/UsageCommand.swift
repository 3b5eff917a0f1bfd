import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl usage`: monthly active devices per organization, with the month's trend.
let usageCommand = Command(
    name: "usage",
    summary: "monthly active devices: totals, limit and grace, per app and per day",
    usage: """
        usage: attestctl usage [--org NAME] [--month YYYY-MM] [--json | --csv] [--data DIR]

        Without --org every organization is shown; --month defaults to the current UTC month.
        --json prints what GET /api/v1/org/usage answers (an array without --org); --csv one
        line per organization and day.

        example: attestctl usage --org acme --month 2026-11
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "org", "month"], switches: ["json", "csv"])
        let (_, store) = try openStore(dataDirectory(args))
        let time = now()
        let month = try args.value("month").map {
            guard let m = UsageReport.parseMonth($0) else { throw UsageError("--month must be YYYY-MM, got \"\($0)\"") }
            return m
        } ?? time.monthKey
        let reports = try store.read { txn -> [UsageReport] in
            let orgs: [OrgRecord]
            if let name = args.value("org") {
                guard let org = try txn.org(named: name) else {
                    throw CommandFailure(.notFound, "no organization \"\(name)\" (see 'attestctl org list')")
                }
                orgs = [org]
            } else {
                orgs = try txn.orgs()
            }
            return try orgs.map {
                UsageReport(org: $0, month: month, totals: try txn.usageMonthReport(org: $0.name, month: month),
                            now: time, activity: try txn.activityDays(org: $0.name, month: month))
            }
        }
        if args.flag("json") {
            Output.out((args.value("org") != nil ? reports[0].json : .array(reports.map(\.json))).prettyJSONText)
        } else if args.flag("csv") {
            var lines = ["org,date,new_devices,active_devices,attestations,refreshes"]
            for r in reports {
                for (i, d) in r.daily.enumerated() {
                    let a = i < r.activity.count ? r.activity[i] : (0, 0)
                    lines.append("\(csv(r.org.name)),\(d.date),\(d.day.newDevices),\(d.day.activeDevices),\(a.0),\(a.1)")
                }
            }
            Output.out(lines.joined(separator: "\n"))
        } else if reports.isEmpty {
            Output.out("no organizations (add one with 'attestctl org add NAME')")
        } else {
            Output.out(reports.map(UsageText.render).joined(separator: "\n\n"))
        }
        return 0
    })

/// A CSV field, quoted when it needs to be.
func csv(_ field: String) -> String {
    field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" })
        ? "\"" + field.replacingAll("\"", with: "\"\"") + "\"" : field
}

/// The human form of a usage report: a summary line, a per-app table and a per-day bar chart.
enum UsageText {
    static func render(_ r: UsageReport) -> String {
        let t = r.totals
        let limit = r.org.madLimit == 0 ? "unlimited" : String(r.org.madLimit)
        var out = "\(r.org.name) · \(r.month) · "
            + "\(t.activeDevices) active device\(t.activeDevices == 1 ? "" : "s") of \(limit)"
        if r.org.madLimit > 0 {
            out += " (\(Int((Double(t.activeDevices) / Double(r.org.madLimit) * 100).rounded()))%)"
        }
        if t.apiKeyDevices > 0 { out += " · \(t.apiKeyDevices) API-key devices (not billed)" }
        if let start = t.graceStartedAt, let end = r.graceEndsAt {
            out += "\n  grace started \(start.iso8601), "
                + (r.onboardingPaused ? "ended \(end.iso8601): NEW DEVICES ARE REFUSED" : "ends \(end.iso8601)")
        }
        if !t.apps.isEmpty {
            out += "\n\n" + Output.table(["APP", "ACTIVE"], t.apps.map { [$0.appID, String($0.activeDevices)] })
        }
        let days = r.daily
        if !days.isEmpty {
            let peak = max(1, days.map { max($0.day.activeDevices, $0.day.newDevices) }.max() ?? 1)
            let width = 40
            out += "\n\n" + Output.table(["DATE", "NEW", "ACTIVE", ""], days.map { d in
                let filled = Int((Double(d.day.activeDevices) / Double(peak) * Double(width)).rounded(.up))
                return [d.date, String(d.day.newDevices), String(d.day.activeDevices),
                        String(repeating: "█", count: filled)]
            })
        }
        return out
    }
}
