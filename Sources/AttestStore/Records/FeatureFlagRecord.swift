import AttestCore

/// A flag's value type (stored as its index: 0 bool, 1 int, 2 double, 3 string, 4 json).
public enum FeatureFlagType: String, CaseIterable, Sendable {
    case bool, int, double, string, json

    var code: UInt8 { UInt8(Self.allCases.firstIndex(of: self)!) }

    init(code: UInt8) throws {
        guard Int(code) < Self.allCases.count else { throw StoreError(.corrupt, "feature flag type \(code)") }
        self = Self.allCases[Int(code)]
    }
}

/// A flag's default value in one environment.
public struct FeatureFlagValue: Hashable, Sendable {
    public var environment: String
    public var valueJSON: String

    public init(environment: String, valueJSON: String) {
        self.environment = environment
        self.valueJSON = valueJSON
    }
}

/// A flag's percentage rollout in one environment: `percent` of identities get `valueJSON`.
public struct FeatureFlagRollout: Hashable, Sendable {
    public var environment: String
    /// 0–100.
    public var percent: UInt8
    public var valueJSON: String

    public init(environment: String, percent: UInt8, valueJSON: String) {
        self.environment = environment
        self.percent = percent
        self.valueJSON = valueJSON
    }
}

/// One feature flag of an app: its type, description, per-environment defaults and rollouts,
/// and its targeting rules in priority order (overrides are stored apart, `FeatureFlagOverrideRecord`).
///
/// Key in `feature_flags`: appID ‖ 0x00 ‖ flagKey (UTF-8). Layout v1:
/// ```
/// u8 1 | type u8 (0 bool 1 int 2 double 3 string 4 json) | description string
///      | createdAt i64 | updatedAt i64
///      | defaults u8 n × (env string, valueJSON string)
///      | rollouts u8 n × (env string, percent u8, valueJSON string)
///      | rules u8 n × (name string, env string ("" = every environment), active u8, rollout u8,
///                      valueJSON string, conditions u8 m × (attribute string,
///                      op u8 (0 eq 1 neq 2 gt 3 gte 4 lt 5 lte 6 in 7 not_in 8 contains 9 starts_with),
///                      operandJSON string))
/// ```
/// A record over `maximumEncodedSize`, or with more than 255 of any list, is refused when
/// written (`Transaction.put(_:appID:)`); reads are not refused.
public struct FeatureFlagRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "feature flag"
    /// 256 KiB: about 20 rules of 16 conditions with values of 1 KiB fit well within it.
    public static let maximumEncodedSize = 256 * 1024
    /// The most entries of each list (defaults, rollouts, rules, a rule's conditions): a u8 count.
    public static let maximumListCount = Int(UInt8.max)

    /// Not part of the value: the key (`Transaction.featureFlag(appID:key:)` sets it).
    public var key: String
    public var type: FeatureFlagType
    public var description: String
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var defaults: [FeatureFlagValue]
    public var rollouts: [FeatureFlagRollout]
    public var rules: [FeatureFlagRule]

    public init(key: String, type: FeatureFlagType, description: String, createdAt: Timestamp, updatedAt: Timestamp,
                defaults: [FeatureFlagValue] = [], rollouts: [FeatureFlagRollout] = [], rules: [FeatureFlagRule] = []) {
        self.key = key
        self.type = type
        self.description = description
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.defaults = defaults
        self.rollouts = rollouts
        self.rules = rules
    }

    /// Why this record may not be written (nil: it may).
    public var writeRefusal: String? {
        let lists = [("defaults", defaults.count), ("rollouts", rollouts.count), ("rules", rules.count)]
            + rules.map { ("conditions of rule \($0.name)", $0.conditions.count) }
        if let (name, count) = lists.first(where: { $0.1 > Self.maximumListCount }) {
            return "feature flag \(key) has \(count) \(name); at most \(Self.maximumListCount) are stored"
        }
        if rollouts.contains(where: { $0.percent > 100 }) || rules.contains(where: { $0.rollout > 100 }) {
            return "feature flag \(key) has a rollout over 100%"
        }
        let size = encoded().count
        return size > Self.maximumEncodedSize
            ? "feature flag \(key) encodes to \(size) bytes; at most \(Self.maximumEncodedSize) are stored" : nil
    }

    public func encode(into w: inout BinaryWriter) {
        w.u8(type.code)
        w.string(description)
        w.i64(createdAt.seconds)
        w.i64(updatedAt.seconds)
        w.u8(UInt8(truncatingIfNeeded: defaults.count))
        for d in defaults {
            w.string(d.environment)
            w.string(d.valueJSON)
        }
        w.u8(UInt8(truncatingIfNeeded: rollouts.count))
        for r in rollouts {
            w.string(r.environment)
            w.u8(r.percent)
            w.string(r.valueJSON)
        }
        w.u8(UInt8(truncatingIfNeeded: rules.count))
        for rule in rules {
            w.string(rule.name)
            w.string(rule.environment)
            w.bool(rule.active)
            w.u8(rule.rollout)
            w.string(rule.valueJSON)
            w.u8(UInt8(truncatingIfNeeded: rule.conditions.count))
            for c in rule.conditions {
                w.string(c.attribute)
                w.u8(c.op.code)
                w.string(c.operandJSON)
            }
        }
    }

    /// `key` is not part of the value: `Transaction.featureFlag(appID:key:)` sets it.
    public init(from r: inout BinaryReader) throws {
        key = ""
        type = try FeatureFlagType(code: try r.u8())
        description = try r.string()
        createdAt = Timestamp(seconds: try r.i64())
        updatedAt = Timestamp(seconds: try r.i64())
        defaults = try (0..<Int(try r.u8())).map { _ in
            FeatureFlagValue(environment: try r.string(), valueJSON: try r.string())
        }
        rollouts = try (0..<Int(try r.u8())).map { _ in
            let environment = try r.string(), percent = try r.u8()
            guard percent <= 100 else { throw StoreError(.corrupt, "feature flag rollout of \(percent)%") }
            return FeatureFlagRollout(environment: environment, percent: percent, valueJSON: try r.string())
        }
        rules = try (0..<Int(try r.u8())).map { _ in
            let name = try r.string(), environment = try r.string(), active = try r.bool(), rollout = try r.u8()
            guard rollout <= 100 else { throw StoreError(.corrupt, "feature flag rule rollout of \(rollout)%") }
            let value = try r.string()
            let conditions = try (0..<Int(try r.u8())).map { _ in
                FeatureFlagCondition(attribute: try r.string(), op: try FeatureFlagOperator(code: try r.u8()),
                                     operandJSON: try r.string())
            }
            return FeatureFlagRule(name: name, environment: environment, active: active, rollout: rollout,
                                   valueJSON: value, conditions: conditions)
        }
    }
}
