import AttestCore

/// How a device's assessment is shown to people (`attestctl device show` and `claims test`,
/// the org API's device page and claims test): one shape for each part, wherever it appears.
extension RiskAssessment {
    /// `[{"signal", "points", "detail"}]`, the factors that make up the score.
    public var factorsJSON: JSONValue {
        .array(factors.map {
            .object([("signal", .string($0.signal)), ("points", .int(Int64($0.points))),
                     ("detail", .string($0.detail))])
        })
    }
}

extension DeviceAssessment {
    /// `[{"key", "value", "when" (the rule's condition as `claims add --when` takes it, or null),
    /// "applied", "why"}]`: each custom claim rule in order, with whether it applied and why.
    public var stepsJSON: JSONValue {
        .array(steps.map {
            .object([("key", .string($0.rule.key)), ("value", $0.rule.value),
                     ("when", $0.rule.condition.map { .string($0.text) } ?? .null),
                     ("applied", .bool($0.applied)), ("why", .string($0.why))])
        })
    }
}
