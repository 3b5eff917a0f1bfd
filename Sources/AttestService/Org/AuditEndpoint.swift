import AttestCore
import AttestStore
import FastCGI

/// The organization audit log (docs/console.md, "Audit"), served by the org pool; any role:
///
/// ```
/// GET /api/v1/org/audit[?limit=1…500 (100)][&before=<cursor>]
///     ← {"entries": [entry…] newest first, "next": cursor of the last entry or null}
/// entry = {at, actor: {kind: cli|api_key|session, id, name, role}, action, target, detail, cursor}
/// ```
/// `next` is null when the page was not full. A malformed limit or cursor is 400.
public enum AuditEndpoint {
    public static let path = "/api/v1/org/audit"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        guard request.method == "GET" else { throw ServiceError(.methodNotAllowed, "Use GET for \(path).") }
        let caller = try OrgCaller.authenticate(request, .read, ctx)
        var limit = 100
        var before: (at: Int64, sequence: UInt64)?
        for pair in request.query.split(separator: "&") {
            if pair.hasPrefix("limit=") {
                guard let n = Int(pair.dropFirst(6)), (1...500).contains(n) else {
                    throw ServiceError(.badRequest, "limit must be 1 to 500.")
                }
                limit = n
            } else if pair.hasPrefix("before=") {
                guard let c = OrgAudit.cursor(String(pair.dropFirst(7))) else {
                    throw ServiceError(.badRequest, "before must be an entry's cursor (<at>.<sequence>).")
                }
                before = c
            }
        }
        let entries = try ctx.store.read { try $0.auditEntries(org: caller.org.name, before: before, limit: limit) }
        let next: JSONValue = entries.count == limit
            ? .string("\(entries.last!.at.seconds).\(entries.last!.sequence)") : .null
        return ServiceContext.json(["entries": .array(entries.map(OrgAudit.json)), "next": next])
    }
}
