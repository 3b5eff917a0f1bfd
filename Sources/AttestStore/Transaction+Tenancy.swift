/// Organizations and apps, and their generation.
///
/// ```
/// meta  "tenancy" → u64 BE   bumped by every write of an org or an app (absent = 0)
/// ```
/// Workers cache app lookups and revalidate them by this one value instead of re-reading
/// and decoding the records after every unrelated write.
extension Transaction {
    static let tenancyKey = Array("tenancy".utf8)

    /// The generation of orgs and apps: changes whenever one of them is written.
    public func tenancyGeneration() throws -> UInt64 {
        guard let bytes = try get(.meta, Self.tenancyKey), bytes.count == 8 else { return 0 }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func bumpTenancy() throws {
        let next = try tenancyGeneration() &+ 1
        try put(.meta, Self.tenancyKey, (0..<8).map { UInt8(truncatingIfNeeded: next >> UInt64(56 - 8 * $0)) })
    }

    public func org(named name: String) throws -> OrgRecord? {
        try get(.orgs, Array(name.utf8)).map { try OrgRecord(encoded: $0) }
    }

    public func put(_ org: OrgRecord) throws {
        try put(.orgs, Array(org.name.utf8), org.encoded())
        try bumpTenancy()
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
        try bumpTenancy()
    }

    /// Every app in App ID order.
    public func apps() throws -> [AppRecord] {
        var found = [AppRecord]()
        try scan(.apps) { _, value in found.append(try AppRecord(encoded: value)); return true }
        return found
    }
}
