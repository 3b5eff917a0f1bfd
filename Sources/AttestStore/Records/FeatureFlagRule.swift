/// A condition's operator (stored as its index: 0 eq … 9 starts_with, in this order).
public enum FeatureFlagOperator: String, CaseIterable, Sendable {
    case eq, neq, gt, gte, lt, lte, `in` = "in", notIn = "not_in", contains, startsWith = "starts_with"

    var code: UInt8 { UInt8(Self.allCases.firstIndex(of: self)!) }

    init(code: UInt8) throws {
        guard Int(code) < Self.allCases.count else { throw StoreError(.corrupt, "feature flag operator \(code)") }
        self = Self.allCases[Int(code)]
    }
}

/// `attribute op operand`: one condition of a rule (the operand as JSON text).
public struct FeatureFlagCondition: Hashable, Sendable {
    public var attribute: String
    public var op: FeatureFlagOperator
    public var operandJSON: String

    public init(attribute: String, op: FeatureFlagOperator, operandJSON: String) {
        self.attribute = attribute
        self.op = op
        self.operandJSON = operandJSON
    }
}

/// A targeting rule of a flag: when every condition holds (and the rollout admits the
/// identity), the flag takes `valueJSON`. Stored inside `FeatureFlagRecord`.
public struct FeatureFlagRule: Hashable, Sendable {
    public var name: String
    /// "" = every environment.
    public var environment: String
    public var active: Bool
    /// 0–100.
    public var rollout: UInt8
    public var valueJSON: String
    public var conditions: [FeatureFlagCondition]

    public init(name: String, environment: String, active: Bool, rollout: UInt8, valueJSON: String,
                conditions: [FeatureFlagCondition]) {
        self.name = name
        self.environment = environment
        self.active = active
        self.rollout = rollout
        self.valueJSON = valueJSON
        self.conditions = conditions
    }
}
