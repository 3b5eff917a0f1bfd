/// Organizations and apps.
extension Transaction {
    public func org(named name: String) throws -> OrgRecord? {
        try get(.orgs, Array(name.utf8)).map { try OrgRecord(encoded: $0) }
    }

    public func put(_ org: OrgRecord) throws {
        try put(.orgs, Array(org.name.utf8), org.encoded())
    }

    /// Every organization in name order.
    public func orgs() throws -> [OrgRecord] {
        var found = [OrgRecord]()
        try scan(.orgs) { _, value in found.append(try OrgRecord(encoded: value)); return true }
        return found
    }

    public func app(id appID: String) throws -> AppRecord? {
        try get(.apps, Array(appID.utf8)).map { try AppRecord(encoded: $0) }
    }

    public func put(_ app: AppRecord) throws {
        try put(.apps, Array(app.appID.utf8), app.encoded())
    }

    /// Every app in App ID order.
    public func apps() throws -> [AppRecord] {
        var found = [AppRecord]()
        try scan(.apps) { _, value in found.append(try AppRecord(encoded: value)); return true }
        return found
    }
}
