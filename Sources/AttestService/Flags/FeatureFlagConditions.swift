import AttestCore
import AttestStore

/// Reading, checking and testing feature-flag conditions (`FeatureFlagCondition`, stored as
/// attribute, operator and operand JSON).
///
/// Written `ATTR OP VALUE` on the command line (`attestctl flags rule add --when 'riskScore lte 20'`,
/// `'custom.plan in ["pro","team"]'`, `'app_version gte 2.1'`): VALUE is JSON, or bare text when
/// it is not JSON, so the condition is the one the API's `{"attribute", "operator", "value"}`
/// with that JSON makes (`custom.score gt 10.25` compares numbers; `custom.build gt "2.10"`
/// versions). The one exception: on a version attribute (`appVersion`, `app_version`, …) a bare
/// version keeps its digits ("2.10" is not the number 2.1), as the API takes only text there.
///
/// Semantics (docs/flags.md): `eq`/`neq` exact; `gt gte lt lte` numbers as numbers, versions as
/// versions; `in`/`not_in` take a JSON array of at most 100 items (a single value counts as a
/// one-element array); `contains`/`starts_with` compare text case-insensitively (on
/// `entitlement`, a list, `contains` asks whether one entitlement is the operand). **A missing
/// value fails every condition**, `neq` and `not_in` included (the claims language differs:
/// there a missing value satisfies `ne`).
public enum FeatureFlagConditions {
    public static let maximumListItems = 100
    public static let maximumOperandBytes = 4_096

    /// Parses `ATTR OP VALUE`. - Throws: `bad_request` naming what is wrong.
    public static func parse(text: String) throws(ServiceError) -> FeatureFlagCondition {
        let words = text.split(maxSplits: 2, omittingEmptySubsequences: true,
                               whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count == 3 else {
            throw ServiceError(.badRequest, "a condition is 'ATTR OP VALUE', e.g. 'riskScore lte 20', got \"\(text)\"")
        }
        let raw = String(words[2])
        var operand = (try? JSONParser.parse(raw)) ?? .string(raw)
        // A version attribute takes only text, so "2.10" there stays 2.10. Elsewhere (custom.<key>
        // included) a JSON number is a number, as the API's JSON sends it: one condition, two forms.
        if FeatureFlagAttribute(name: String(words[0]))?.kind == .version, operand.doubleValue != nil {
            operand = .string(raw)
        }
        return try make(attribute: String(words[0]), op: String(words[1]), operand: operand)
    }

    /// Parses the API's `{"attribute", "operator", "value"}`. - Throws: `bad_request`.
    public static func parse(json: JSONValue) throws(ServiceError) -> FeatureFlagCondition {
        guard let a = json["attribute"]?.stringValue, let o = json["operator"]?.stringValue,
              let v = json["value"] else {
            throw ServiceError(.badRequest, "each condition needs \"attribute\", \"operator\" and \"value\"")
        }
        return try make(attribute: a, op: o, operand: v)
    }

    /// The condition as the API shows it.
    public static func json(_ c: FeatureFlagCondition) -> JSONValue {
        .object([("attribute", .string(c.attribute)), ("operator", .string(c.op.rawValue)),
                 ("value", (try? JSONParser.parse(c.operandJSON)) ?? .null)])
    }

    /// `riskScore lte 20`: the `--when` form.
    public static func text(_ c: FeatureFlagCondition) -> String { "\(c.attribute) \(c.op.rawValue) \(c.operandJSON)" }

    /// A checked condition. - Throws: `bad_request` when the attribute, the operator or the
    /// operand does not fit.
    public static func make(attribute name: String, op opName: String,
                            operand: JSONValue) throws(ServiceError) -> FeatureFlagCondition {
        guard let attribute = FeatureFlagAttribute(name: name) else {
            throw ServiceError(.badRequest, "unknown attribute \(name) (one of "
                                            + FeatureFlagAttribute.names.joined(separator: ", ") + ")")
        }
        guard let op = FeatureFlagOperator(rawValue: opName) else {
            let names = FeatureFlagOperator.allCases.map(\.rawValue).joined(separator: ", ")
            throw ServiceError(.badRequest, "unknown operator \(opName) (one of \(names))")
        }
        try check(attribute, op, operand)
        let text = operand.jsonText
        guard text.utf8.count <= maximumOperandBytes else {
            throw ServiceError(.badRequest, "\(name) \(opName): the value is longer than \(maximumOperandBytes) bytes")
        }
        return FeatureFlagCondition(attribute: name, op: op, operandJSON: text)
    }

    private static func check(_ a: FeatureFlagAttribute, _ op: FeatureFlagOperator,
                              _ operand: JSONValue) throws(ServiceError) {
        let kind = a.kind
        let allowed: [FeatureFlagOperator]
        switch kind {
        case .number: allowed = [.eq, .neq, .gt, .gte, .lt, .lte, .in, .notIn]
        case .version, .claimedText: allowed = FeatureFlagOperator.allCases
        case .text: allowed = [.eq, .neq, .in, .notIn, .contains, .startsWith]
        case .bool: allowed = [.eq, .neq]
        case .list: allowed = [.in, .notIn, .contains]
        }
        guard allowed.contains(op) else {
            throw ServiceError(.badRequest, "\(a.name) takes " + allowed.map(\.rawValue).joined(separator: ", ")
                                            + ", not \(op.rawValue)")
        }
        let values: [JSONValue]
        if op == .in || op == .notIn {
            values = operand.arrayValue ?? [operand]
            guard !values.isEmpty, values.count <= maximumListItems else {
                throw ServiceError(.badRequest, "\(a.name) \(op.rawValue) takes 1 to \(maximumListItems) values")
            }
        } else {
            values = [operand]
        }
        for v in values {
            let fits: Bool
            switch (kind, op) {
            case (_, .contains), (_, .startsWith): fits = v.stringValue != nil
            case (.number, _): fits = v.doubleValue != nil
            case (.version, _): fits = v.stringValue.map(Versions.isVersion) ?? false
            case (.text, _), (.list, _): fits = v.stringValue != nil
            case (.bool, _): fits = v.boolValue != nil
            case (.claimedText, .gt), (.claimedText, .gte), (.claimedText, .lt), (.claimedText, .lte):
                fits = v.doubleValue != nil || (v.stringValue.map(Versions.isVersion) ?? false)
            case (.claimedText, _): fits = v.stringValue != nil || v.doubleValue != nil || v.boolValue != nil
            }
            guard fits else {
                throw ServiceError(.badRequest, "\(a.name) \(op.rawValue) compares with "
                                                + expected(kind, op) + ", got \(v.jsonText)")
            }
        }
    }

    private static func expected(_ kind: FeatureFlagAttribute.Kind, _ op: FeatureFlagOperator) -> String {
        if op == .contains || op == .startsWith { return "text" }
        switch kind {
        case .number: return "a number"
        case .version: return "a version written as text (\"2.1.0\")"
        case .text, .list: return "text"
        case .bool: return "true or false"
        case .claimedText: return "text, a number, or a version written as text"
        }
    }
}

/// A condition ready to test: its attribute resolved and its operands parsed once.
struct CompiledCondition: Sendable {
    let source: FeatureFlagCondition
    let attribute: FeatureFlagAttribute
    let op: FeatureFlagOperator
    let operands: [JSONValue]
    /// The FastCGI name of the header a client-claimed attribute reads, made once here rather
    /// than at every request (`FeatureFlagTargeting.paramName`); nil for a server attribute.
    let headerParam: String?

    /// nil for a stored condition this version cannot read (it then never holds).
    init?(_ c: FeatureFlagCondition) {
        guard let attribute = FeatureFlagAttribute(name: c.attribute),
              let operand = try? JSONParser.parse(c.operandJSON) else { return nil }
        source = c
        self.attribute = attribute
        op = c.op
        operands = (c.op == .in || c.op == .notIn) ? (operand.arrayValue ?? [operand]) : [operand]
        switch attribute {
        case .claimed(let h): headerParam = FeatureFlagTargeting.paramName(h.header)
        case .custom(let key): headerParam = FeatureFlagTargeting.paramName("X-Custom-" + key)
        default: headerParam = nil
        }
    }

    /// Whether the condition holds for `actual`, the caller's value (`nil`: missing, which
    /// fails every operator).
    func holds(_ actual: JSONValue?) -> Bool {
        guard let actual else { return false }
        switch op {
        case .eq: return same(actual, operands[0])
        case .neq: return !same(actual, operands[0])
        case .in: return operands.contains { same(actual, $0) }
        case .notIn: return !operands.contains { same(actual, $0) }
        case .gt: return order(actual, operands[0]).map { $0 > 0 } ?? false
        case .gte: return order(actual, operands[0]).map { $0 >= 0 } ?? false
        case .lt: return order(actual, operands[0]).map { $0 < 0 } ?? false
        case .lte: return order(actual, operands[0]).map { $0 <= 0 } ?? false
        case .contains, .startsWith:
            guard let needle = operands[0].stringValue?.lowercased() else { return false }
            let haystack = actual.arrayValue?.compactMap(\.stringValue) ?? actual.stringValue.map { [$0] } ?? []
            return haystack.contains {
                let h = $0.lowercased()
                if op == .startsWith { return h.hasPrefix(needle) }
                return attribute.kind == .list ? h == needle : h.contains(needle)
            }
        }
    }

    private func same(_ actual: JSONValue, _ operand: JSONValue) -> Bool {
        switch attribute.kind {
        case .number:
            return actual.doubleValue != nil && actual.doubleValue == operand.doubleValue
        case .version:
            guard let a = actual.stringValue, let b = operand.stringValue else { return false }
            return Versions.compare(a, b) == 0
        case .list:
            return actual.arrayValue?.contains { $0.stringValue != nil && $0.stringValue == operand.stringValue }
                ?? false
        case .text, .bool:
            return actual == operand
        case .claimedText:
            guard let a = actual.stringValue else { return false }
            return a == (operand.stringValue ?? operand.jsonText)
        }
    }

    private func order(_ actual: JSONValue, _ operand: JSONValue) -> Int? {
        switch attribute.kind {
        case .number:
            guard let a = actual.doubleValue, let b = operand.doubleValue else { return nil }
            return a < b ? -1 : a > b ? 1 : 0
        case .version:
            guard let a = actual.stringValue, let b = operand.stringValue else { return nil }
            return Versions.compare(a, b)
        case .claimedText:
            guard let a = actual.stringValue else { return nil }
            if let x = Double(a), x.isFinite, let y = operand.doubleValue {
                return x < y ? -1 : x > y ? 1 : 0
            }
            guard let b = operand.stringValue else { return nil }
            return Versions.compare(a, b)
        case .text, .bool, .list:
            return nil
        }
    }
}
