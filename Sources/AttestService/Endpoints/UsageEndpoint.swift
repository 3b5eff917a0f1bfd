import AttestCore
import AttestStore
import FastCGI

/// `GET /api/v1/org/usage[?month=YYYY-MM]` with `Authorization: Bearer aat_…`: the API key's
/// organization's usage report (`UsageReport`) for the month (default: the current UTC month).
/// 401 `unauthorized` for a missing, wrong or revoked key; 400 for a malformed month. Only the
/// key's own organization is ever visible.
public enum UsageEndpoint {
    public static let path = "/api/v1/org/usage"

    static func usage(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        guard request.method == "GET" else { throw ServiceError(.methodNotAllowed, "Use GET for \(path).") }
        let org = try OrgCaller.authenticate(request, .read, ctx).org
        let now = ctx.clock.now()
        var month = now.monthKey
        for pair in request.query.split(separator: "&") where pair.hasPrefix("month=") {
            guard let parsed = UsageReport.parseMonth(String(pair.dropFirst(6))) else {
                throw ServiceError(.badRequest, "month must be YYYY-MM.")
            }
            month = parsed
        }
        let (totals, activity) = try ctx.store.read {
            (try $0.usageMonthReport(org: org.name, month: month), try $0.activityDays(org: org.name, month: month))
        }
        return ServiceContext.json(UsageReport(org: org, month: month, totals: totals, now: now,
                                               activity: activity).json)
    }
}
