import AttestCore
import AttestStore

/// An app's custom claims (docs/contract.md §6): an ordered list of `ClaimRule`s stored as JSON text in
/// `AppRecord.customClaimsJSON` (both the current and the earlier format are read; `encode`
/// writes the current one). Evaluated afresh at every validate and refresh; a later claim
/// with the same key replaces an earlier one.
///
/// Tier limits: free 1 claim (static only), pro 5, business 10, enterprise 20.
public enum CustomClaims {
    /// Longest stored claims text (20 claims of the largest size fit).
    static let maximumBytes = 32_768

    /// The rules of a stored claims text ("" = none).
    /// - Throws: `bad_request` naming the first claim it cannot read.
    public static func parse(_ json: String) throws(ServiceError) -> [ClaimRule] {
        guard !json.isEmpty else { return [] }
        guard let items = (try? JSONParser.parse(json))?.arrayValue else {
            throw ServiceError(.badRequest, "custom claims must be a JSON array")
        }
        var rules = [ClaimRule]()
        for item in items { rules.append(try ClaimRule(json: item)) }
        return rules
    }

    /// The stored text of `rules` ("" for none).
    public static func encode(_ rules: [ClaimRule]) -> String {
        rules.isEmpty ? "" : JSONValue.array(rules.map(\.json)).jsonText
    }

    /// Checks `rules` against the tier's limits.
    /// - Throws: `bad_request` with what to do about it.
    public static func validate(_ rules: [ClaimRule], tier: Tier) throws(ServiceError) {
        guard rules.count <= tier.customClaimLimit else {
            throw ServiceError(.badRequest, "the \(tier.rawValue) tier allows \(tier.customClaimLimit) custom "
                                            + "claim(s); this would make \(rules.count) "
                                            + "(remove one with 'attestctl claims remove', "
                                            + "or upgrade the organization's tier)")
        }
        if tier == .free, let conditional = rules.first(where: { $0.condition != nil }) {
            throw ServiceError(.badRequest, "conditional claims (--when) need the pro tier or above; claim "
                                            + "\(conditional.key) has one")
        }
        for rule in rules {
            try rule.check()
            // A version as a JSON number has lost its trailing zeros by now (17.10 read as 17.1):
            // refused where claims are written; the bare --when form keeps them as text.
            if let condition = rule.condition, condition.property.kind == .version {
                let operands = condition.operand.arrayValue ?? [condition.operand]
                if operands.contains(where: { if case .double = $0 { return true } else { return false } }) {
                    throw ServiceError(.badRequest, "claim \(rule.key): write the version as text (\"17.10\", not "
                                                    + "17.10): a JSON number loses its trailing zeros")
                }
            }
        }
        guard encode(rules).utf8.count <= maximumBytes else {
            throw ServiceError(.badRequest, "custom claims are longer than \(maximumBytes) bytes")
        }
    }

    /// The rules of `rules` a tier evaluates: claims written under a higher tier stay stored,
    /// but after a downgrade only the first `customClaimLimit` apply, static ones alone on
    /// free (whose tokens carry no risk score, not even through a claim's condition).
    public static func allowed(_ rules: [ClaimRule], tier: Tier) -> [ClaimRule] {
        Array((tier == .free ? rules.filter { $0.condition == nil } : rules).prefix(tier.customClaimLimit))
    }

    /// Checks a stored claims text against the syntax and the tier's limits.
    public static func validate(_ json: String, tier: Tier) throws(ServiceError) {
        try validate(try parse(json), tier: tier)
    }

    /// What one rule did for one device.
    public struct Step: Sendable {
        public let rule: ClaimRule
        public let applied: Bool
        /// "always", or the comparison with the device's value, e.g. `riskScore 30 le 20: no`.
        public let why: String
    }

    /// The claims for one device, in definition order, and (with `explain`, for the CLI) why
    /// each rule applied or not.
    public static func evaluate(_ rules: [ClaimRule], profile: DeviceProfile, risk: RiskAssessment,
                                explain: Bool = false) -> (claims: [(String, JSONValue)], steps: [Step]) {
        var out = [(String, JSONValue)]()
        var steps = [Step]()
        for rule in rules {
            var holds = true
            var why = "always"
            if let c = rule.condition {
                let actual = c.property.value(of: profile, risk: risk)
                holds = c.holds(actual)
                if explain {
                    why = "\(c.property.rawValue) \(actual?.jsonText ?? "(not reported)") \(c.op.rawValue) "
                          + "\(c.operand.jsonText): \(holds ? "yes" : "no")"
                }
            }
            if explain { steps.append(Step(rule: rule, applied: holds, why: why)) }
            guard holds else { continue }
            if let i = out.firstIndex(where: { $0.0 == rule.key }) { out.remove(at: i) }
            out.append((rule.key, rule.value))
        }
        return (out, steps)
    }

    /// The response's `customClaims`: strings as they are, anything else as JSON text.
    public static func flattened(_ claims: [(String, JSONValue)]) -> JSONValue {
        .object(claims.map { ($0.0, .string($0.1.stringValue ?? $0.1.jsonText)) })
    }
}

extension AppContext {
    /// The app's claim rules, as far as its organization's tier allows (`CustomClaims.allowed`);
    /// a stored text that no longer reads (it was checked when set) gives none.
    var claimRules: [ClaimRule] {
        if let cached = parsedClaims { return cached }
        let rules = CustomClaims.allowed((try? CustomClaims.parse(app.customClaimsJSON)) ?? [], tier: org.tier)
        parsedClaims = rules
        return rules
    }
}
