import AttestCore
import AttestStore

/// The registered app a device request is for and its organization (`AppLookup`).
/// A class: it is cached per worker and handed around without copying its strings.
final class AppContext {
    let app: AppRecord
    let org: OrgRecord
    /// The app's claim rules, parsed at first use (`claimRules`).
    var parsedClaims: [ClaimRule]?
    /// The organization's subject-secret HMAC, keyed at first use (`subjectKey`).
    var subjectHMAC: HMACSHA256?

    init(app: AppRecord, org: OrgRecord) {
        self.app = app
        self.org = org
    }
}
