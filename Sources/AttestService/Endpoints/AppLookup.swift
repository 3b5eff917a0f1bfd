import AttestCore
import AttestStore
import FastCGI

/// Resolving the app a device request is for, from `X-Bundle-ID` and `X-Team-ID`.
struct AppContext {
    let app: AppRecord
    let org: OrgRecord
}

extension ServiceContext {
    /// The registered, enabled app the headers name (403 `app_not_registered` otherwise).
    /// `required == false` lets a request without both headers through as `nil`.
    func appContext(_ request: Request, in txn: Transaction, required: Bool = true) throws -> AppContext? {
        let bundle = request.header("X-Bundle-ID")?.trimmedNonEmpty
        let team = request.header("X-Team-ID")?.trimmedNonEmpty
        guard let bundle, let team else {
            if !required && bundle == nil && team == nil { return nil }
            throw ServiceError(.badRequest, "The X-Bundle-ID and X-Team-ID headers are required.",
                               hint: "Send your app's bundle identifier and Apple Developer Team ID in the headers.")
        }
        let appID = AppRecord.appID(teamID: team, bundleID: bundle)
        guard let app = try txn.app(id: appID), app.enabled, let org = try txn.org(named: app.org) else {
            throw ServiceError(.appNotRegistered, "The app \(appID) is not registered with this server.",
                               hint: "Register it with 'attestctl app add --org ORG --team \(team) --bundle \(bundle)'.",
                               log: "unknown or disabled app \(appID)")
        }
        return AppContext(app: app, org: org)
    }
}

extension String {
    var trimmedNonEmpty: String? {
        let t = self.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        return t.isEmpty ? nil : String(t)
    }
}
