import AttestCore
import AttestStore

/// One app's feature flags at one generation, ready to answer: per environment the answer
/// bytes of the defaults alone (`{"flags":{…}}`, also the stream's payload), and the rules and
/// rollouts parsed once. Built from one read transaction; a worker keeps it until the app's
/// `FeatureFlagAppRecord.generation` changes.
///
/// Evaluation order for one flag in one environment (`answer`, `explain`):
/// 1. an unexpired override: `device:<deviceId>` first, then `sdk:<X-Device-ID>`;
/// 2. the first active rule for this environment (or for every environment) whose conditions
///    all hold and whose rollout admits the caller (`FeatureFlagBucket`);
/// 3. the environment's rollout, when it admits the caller;
/// 4. the environment's default;
/// 5. else the flag is left out of the answer.
///
/// Only what the tier allows is served (`FeatureFlagLimits`): the first flags by key, the
/// first rules of each, rollouts from pro up, the first environments (production first).
/// Answers are compact JSON on one line, keys in flag-key order; an environment the app does
/// not have answers `{"flags":{}}`.
public final class CompiledFeatureFlags: Sendable {
    public let appID: String
    public let generation: UInt64
    public let tier: Tier
    /// The app has overrides (the caller's must then be read).
    public let hasOverrides: Bool
    /// The environments served, production first.
    public let environments: [String]
    /// The app's release notes, as stored (What's New filters them per device).
    public let notes: [ReleaseNoteRecord]
    let flags: [Flag]
    let defaults: [String: [UInt8]]
    /// Environments where some flag has a rule or a rollout.
    let dynamic: Set<String>

    static let emptyAnswer = Array(#"{"flags":{}}"#.utf8)

    struct Rule: Sendable {
        let number: Int
        let name: String
        let environment: String
        let active: Bool
        let rollout: UInt8
        let valueJSON: String
        /// nil when a stored condition cannot be read: the rule then never matches.
        let conditions: [CompiledCondition]?

        func applies(to env: String) -> Bool { active && (environment.isEmpty || environment == env) }
    }

    struct Flag: Sendable {
        let key: String
        let type: FeatureFlagType
        let defaults: [String: String]
        let rollouts: [String: (percent: UInt8, valueJSON: String)]
        let rules: [Rule]
    }

    /// Reads the app's flags, environments and notes in `txn` and compiles what `tier` allows.
    public static func build(appID: String, tier: Tier, in txn: Transaction) throws -> CompiledFeatureFlags {
        CompiledFeatureFlags(appID: appID, tier: tier, app: try txn.featureFlagApp(appID: appID),
                             flags: try txn.featureFlags(appID: appID), notes: try txn.releaseNotes(appID: appID))
    }

    /// From records already read.
    public init(appID: String, tier: Tier, app: FeatureFlagAppRecord?, flags records: [FeatureFlagRecord],
                notes: [ReleaseNoteRecord]) {
        let limits = tier.featureFlagLimits
        self.appID = appID
        self.tier = tier
        generation = app?.generation ?? 0
        hasOverrides = (app?.overrideCount ?? 0) > 0
        var envs = [FeatureFlagAdmin.production]
        for e in app?.environments ?? []
        where e.name != FeatureFlagAdmin.production && envs.count < limits.environments {
            envs.append(e.name)
        }
        environments = envs
        self.notes = notes
        var flags = [Flag]()
        for r in records.sorted(by: { $0.key < $1.key }).prefix(limits.flags) where FeatureFlagAdmin.isKey(r.key) {
            var rules = [Rule]()
            for (i, rule) in r.rules.prefix(limits.rulesPerFlag).enumerated() {
                let parsed = rule.conditions.map(CompiledCondition.init)
                rules.append(Rule(number: i + 1, name: rule.name, environment: rule.environment, active: rule.active,
                                  rollout: rule.rollout, valueJSON: rule.valueJSON,
                                  conditions: parsed.contains { $0 == nil } ? nil : parsed.compactMap { $0 }))
            }
            var rollouts = [String: (percent: UInt8, valueJSON: String)]()
            if limits.rollouts {
                for ro in r.rollouts where ro.percent > 0 { rollouts[ro.environment] = (ro.percent, ro.valueJSON) }
            }
            var defaults = [String: String]()
            for d in r.defaults { defaults[d.environment] = d.valueJSON }
            flags.append(Flag(key: r.key, type: r.type, defaults: defaults, rollouts: rollouts, rules: rules))
        }
        self.flags = flags
        var answers = [String: [UInt8]]()
        var dynamic = Set<String>()
        for env in envs {
            answers[env] = Self.answer(flags.compactMap { f in f.defaults[env].map { (f.key, $0) } })
            if flags.contains(where: { f in f.rollouts[env] != nil || f.rules.contains { $0.applies(to: env) } }) {
                dynamic.insert(env)
            }
        }
        defaults = answers
        self.dynamic = dynamic
    }

    public func hasEnvironment(_ env: String) -> Bool { defaults[env] != nil }

    /// `{"flags":{…}}` of `environment`'s defaults; `{"flags":{}}` for one the app does not have.
    public func defaultsAnswer(environment: String) -> [UInt8] { defaults[environment] ?? Self.emptyAnswer }

    /// The caller's answer in `environment`. `overrides`: the app's overrides for the caller's
    /// subjects (others are ignored, expired ones too).
    public func answer(environment: String, caller: FeatureFlagCaller, targeting: FeatureFlagTargeting,
                       overrides: [FeatureFlagOverrideRecord], now: Timestamp) -> [UInt8] {
        guard let plain = defaults[environment] else { return Self.emptyAnswer }
        let forced = applicable(overrides, caller: caller, targeting: targeting, now: now)
        guard dynamic.contains(environment) || !forced.isEmpty else { return plain }
        var noSteps: [String]? = nil
        return Self.answer(flags.compactMap { f in
            evaluate(f, environment, caller, targeting, forced, steps: &noSteps).map { (f.key, $0) }
        })
    }

    /// Each flag's value for the caller (nil: left out) and the steps that decided it:
    /// `attestctl flags test`.
    public func explain(environment: String, caller: FeatureFlagCaller, targeting: FeatureFlagTargeting,
                        overrides: [FeatureFlagOverrideRecord], now: Timestamp,
                        key: String? = nil) -> [FeatureFlagExplanation] {
        guard hasEnvironment(environment) else {
            return flags.filter { key == nil || $0.key == key }.map {
                FeatureFlagExplanation(key: $0.key, valueJSON: nil,
                                       steps: ["environment \(environment) does not exist for \(appID): left out"])
            }
        }
        let forced = applicable(overrides, caller: caller, targeting: targeting, now: now)
        return flags.filter { key == nil || $0.key == key }.map { f in
            var steps: [String]? = []
            let value = evaluate(f, environment, caller, targeting, forced, steps: &steps)
            return FeatureFlagExplanation(key: f.key, valueJSON: value, steps: steps ?? [])
        }
    }

    /// flagKey → (value, why) of the overrides that apply: device first, then sdk.
    private func applicable(_ overrides: [FeatureFlagOverrideRecord], caller: FeatureFlagCaller,
                            targeting: FeatureFlagTargeting, now: Timestamp) -> [String: (String, String)] {
        guard hasOverrides, !overrides.isEmpty else { return [:] }
        let deviceID = caller.deviceID
        var sdk: String?
        if case .apiKey(let id) = caller { sdk = id ?? targeting.sdkDeviceID } else { sdk = targeting.sdkDeviceID }
        var found = [String: (String, String)]()
        for o in overrides where o.expiresAt.map({ now < $0 }) ?? true {
            switch o.subject {
            case .device(let id) where id == deviceID:
                found[o.flagKey] = (o.valueJSON, "override device:\(id)")
            case .sdk(let id) where id == sdk && found[o.flagKey].map({ !$0.1.hasPrefix("override device:") }) ?? true:
                found[o.flagKey] = (o.valueJSON, "override sdk:\(id) (client-claimed X-Device-ID)")
            default: continue
            }
        }
        return found
    }

    private func evaluate(_ f: Flag, _ env: String, _ caller: FeatureFlagCaller, _ targeting: FeatureFlagTargeting,
                          _ forced: [String: (String, String)], steps: inout [String]?) -> String? {
        if let (value, why) = forced[f.key] {
            steps?.append(why)
            return value
        }
        let identity = caller.identity(targeting)
        for rule in f.rules where rule.applies(to: env) {
            guard let conditions = rule.conditions else {
                steps?.append("rule \(rule.number) '\(rule.name)': a condition cannot be read: skipped")
                continue
            }
            var holds = true
            var parts = [String]()
            for c in conditions {
                let actual = caller.value(c, targeting)
                let ok = c.holds(actual)
                if steps != nil {
                    parts.append("\(c.attribute.name) \(actual.map { $0.jsonText } ?? "(missing)") \(c.op.rawValue) "
                                 + "\(c.source.operandJSON): \(ok ? "yes" : "no")")
                }
                if !ok { holds = false; if steps == nil { break } }
            }
            var admitted = holds
            if holds && rule.rollout < 100 {
                admitted = FeatureFlagBucket.admits(percent: rule.rollout, identity: identity, key: f.key)
                if steps != nil { parts.append(rolloutText(rule.rollout, identity, f.key, admitted)) }
            }
            steps?.append("rule \(rule.number) '\(rule.name)' \(admitted ? "matched" : "did not match"): "
                          + parts.joined(separator: "; "))
            if admitted { return rule.valueJSON }
        }
        if let rollout = f.rollouts[env] {
            let admitted = FeatureFlagBucket.admits(percent: rollout.percent, identity: identity, key: f.key)
            steps?.append("rollout \(rollout.percent)% (\(env)): "
                          + rolloutText(rollout.percent, identity, f.key, admitted))
            if admitted { return rollout.valueJSON }
        }
        if let value = f.defaults[env] {
            steps?.append("default (\(env))")
            return value
        }
        steps?.append("no default in \(env): left out")
        return nil
    }

    private func rolloutText(_ percent: UInt8, _ identity: [UInt8]?, _ key: String, _ admitted: Bool) -> String {
        guard let identity else {
            return "rollout \(percent)%: no identity (an API key without X-Device-ID): \(admitted ? "yes" : "no")"
        }
        let bucket = FeatureFlagBucket.bucket(identity: identity, key: key)
        return "rollout bucket \(bucket) < \(percent): \(admitted ? "yes" : "no")"
    }

    /// `{"flags":{"k":v,…}}` from (key, value JSON) pairs; keys are `[A-Za-z0-9_.-]`, so they
    /// need no escaping.
    static func answer(_ pairs: [(String, String)]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16 + pairs.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 4 })
        out += #"{"flags":{"#.utf8
        for (i, (key, value)) in pairs.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out += key.utf8
            out += #"":"#.utf8
            out += value.utf8
        }
        out += "}}".utf8
        return out
    }
}

/// One flag's value for a described caller, and why: `attestctl flags test`.
public struct FeatureFlagExplanation: Sendable, Equatable {
    public let key: String
    /// The value's JSON, or nil when the flag is left out.
    public let valueJSON: String?
    /// The steps that decided it, in order ("override device:…", "rule 2 'beta' matched: …",
    /// "rollout 50% (production): …", "default (production)").
    public let steps: [String]

    public init(key: String, valueJSON: String?, steps: [String]) {
        self.key = key
        self.valueJSON = valueJSON
        self.steps = steps
    }
}
