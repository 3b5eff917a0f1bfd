import AttestCore
import AttestStore

/// What each tier allows for feature flags (docs/flags.md, "Tier limits"; the hosted limits,
/// with "unlimited" capped for the store's sake). Pinned by `FeatureFlagLimitsTests`.
///
/// | | free | pro | business | enterprise |
/// |---|---|---|---|---|
/// | flags per app | 10, on/off (`bool`) only | 50 | 200 | 10,000 |
/// | environments per app (production included) | 1 | 3 | 10 | 64 |
/// | targeting rules per flag | 0 | 5 | 20 | 100 |
/// | percentage rollouts | no | yes | yes | yes |
/// | overrides per flag | 1,000 | 1,000 | 1,000 | 1,000 |
/// | release notes per app | 500 | 500 | 500 | 500 |
///
/// Past a limit a write is refused with 403 `forbidden` naming the limit and the tier, with
/// `limit` and `current` members. After a downgrade nothing is deleted: only what the tier
/// allows is served (the first flags by key, the first rules, no rollouts on free).
public struct FeatureFlagLimits: Sendable, Equatable {
    public let tier: Tier
    public let flags: Int
    public let environments: Int
    public let rulesPerFlag: Int
    public let onOffOnly: Bool
    public let rollouts: Bool
    public let overridesPerFlag = 1_000
    public let notes = 500
    public let conditionsPerRule = 16

    public init(tier: Tier) {
        self.tier = tier
        switch tier {
        case .free: (flags, environments, rulesPerFlag, onOffOnly, rollouts) = (10, 1, 0, true, false)
        case .pro: (flags, environments, rulesPerFlag, onOffOnly, rollouts) = (50, 3, 5, false, true)
        case .business: (flags, environments, rulesPerFlag, onOffOnly, rollouts) = (200, 10, 20, false, true)
        case .enterprise: (flags, environments, rulesPerFlag, onOffOnly, rollouts) = (10_000, 64, 100, false, true)
        }
    }

    /// 403 `forbidden`: "the pro tier allows 5 targeting rules per flag; this would make 6".
    public func exceeded(_ what: String, limit: Int, wouldBe: Int) -> ServiceError {
        ServiceError(.forbidden, "The \(tier.rawValue) tier allows \(limit) \(what); this would make \(wouldBe).",
                     hint: "Remove one first, or move the organization to a higher tier.",
                     log: "feature flags: \(what) at \(limit) on \(tier.rawValue)",
                     extra: [("limit", .int(Int64(limit))), ("current", .int(Int64(wouldBe - 1)))])
    }

    /// 403 `forbidden` for a feature the tier lacks.
    public func lacks(_ what: String) -> ServiceError {
        ServiceError(.forbidden, "The \(tier.rawValue) tier does not include \(what).",
                     hint: "Move the organization to the pro tier or above.",
                     log: "feature flags: \(what) refused on \(tier.rawValue)",
                     extra: [("limit", .int(0)), ("current", .int(0))])
    }
}

extension Tier {
    /// This tier's feature-flag limits.
    public var featureFlagLimits: FeatureFlagLimits { FeatureFlagLimits(tier: self) }
}
