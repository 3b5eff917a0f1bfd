import AttestCore

/// One custom claim of an app (docs/contract.md §6): `key` gets `value` (any JSON), always or only when
/// its condition holds. An app's claims are an ordered list; a later claim with the same key
/// wins (`CustomClaims.evaluate`).
///
/// Stored in `AppRecord.customClaimsJSON` as a JSON array, one object per claim:
/// ```
/// {"key": "tier", "value": "free"}
/// {"key": "tier", "value": "premium", "when": {"property": "subscribed", "op": "eq", "value": true}}
/// ```
/// The format before it (still read, rewritten in this one at the next change):
/// `{"type": "static", "key", "value"}` and
/// `{"type": "conditional", "key", "property", "equals": "<text>", "value"}` (= op `eq`).
public struct ClaimRule: Sendable, Equatable {
    public var key: String
    public var value: JSONValue
    public var condition: ClaimCondition?

    public init(key: String, value: JSONValue, condition: ClaimCondition? = nil) {
        self.key = key
        self.value = value
        self.condition = condition
    }

    /// Longest key and value (JSON text), in UTF-8 bytes: tokens stay small.
    public static let keyBytes = 64
    public static let valueBytes = 1024

    /// The stored form.
    public var json: JSONValue {
        var members: [(String, JSONValue)] = [("key", .string(key)), ("value", value)]
        if let condition { members.append(("when", condition.json)) }
        return .object(members)
    }

    /// Reads one stored claim, in either format.
    /// - Throws: `bad_request` naming what is wrong.
    public init(json item: JSONValue) throws(ServiceError) {
        guard let key = item["key"]?.stringValue, let value = item["value"] else {
            throw ServiceError(.badRequest, "each claim needs a \"key\" (text) and a \"value\"")
        }
        self.key = key
        self.value = value
        switch item["type"]?.stringValue {
        case nil:
            condition = try item["when"].map { (when) throws(ServiceError) in
                try ClaimCondition(json: when, claim: key)
            }
        case "static":
            condition = nil
        case "conditional":
            guard let name = item["property"]?.stringValue, let equals = item["equals"]?.stringValue else {
                throw ServiceError(.badRequest, "conditional claim \(key) needs \"property\" and \"equals\"")
            }
            condition = try ClaimCondition(property: name, op: "eq", operand: .string(equals), claim: key)
        case let other?:
            throw ServiceError(.badRequest, "claim \(key): type \(other) is neither \"static\" nor \"conditional\"")
        }
        // Sizes are checked where claims are written (`CustomClaims.validate`), not here:
        // claims stored before the limits existed must keep reading, or one oversized claim
        // would take all of an app's claims out of its tokens.
    }

    /// Checks the key's and value's sizes.
    func check() throws(ServiceError) {
        guard !key.isEmpty, key.utf8.count <= Self.keyBytes else {
            throw ServiceError(.badRequest, "a claim key is 1 to \(Self.keyBytes) bytes, got \"\(key)\"")
        }
        guard value.jsonText.utf8.count <= Self.valueBytes else {
            throw ServiceError(.badRequest, "claim \(key): the value's JSON is longer than \(Self.valueBytes) bytes")
        }
    }
}

/// A claim's condition: a device property compared with a JSON operand.
///
/// Written `PROPERTY OP VALUE` (`attestctl claims add --when 'riskScore le 20'`): VALUE is JSON,
/// or bare text when it is not (`environment eq production`, `appVersion ge 2.10.0`).
/// Numbers compare as numbers, versions as dotted versions ("2.10" > "2.9"), text exactly;
/// `in` takes a JSON array. A property the device did not report (an empty `appVersion`)
/// satisfies only `ne`.
public struct ClaimCondition: Sendable, Equatable {
    public var property: DeviceProperty
    public var op: ClaimOperator
    public var operand: JSONValue

    public var json: JSONValue {
        .object([("property", .string(property.rawValue)), ("op", .string(op.rawValue)), ("value", operand)])
    }

    /// `riskScore le 20`, `platform in ["iOS","iPadOS"]`: the `--when` form (text operands quoted).
    public var text: String { "\(property.rawValue) \(op.rawValue) \(operand.jsonText)" }

    init(json: JSONValue, claim: String) throws(ServiceError) {
        guard let p = json["property"]?.stringValue, let o = json["op"]?.stringValue, let v = json["value"] else {
            throw ServiceError(.badRequest, "claim \(claim): \"when\" needs \"property\", \"op\" and \"value\"")
        }
        try self.init(property: p, op: o, operand: v, claim: claim)
    }

    /// Parses `PROPERTY OP VALUE`.
    public init(text: String, claim: String) throws(ServiceError) {
        let words = text.split(maxSplits: 2, omittingEmptySubsequences: true,
                               whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count == 3 else {
            throw ServiceError(.badRequest,
                               "--when must be 'PROPERTY OP VALUE', e.g. 'riskScore le 20', got \"\(text)\"")
        }
        let raw = String(words[2])
        var operand = (try? JSONParser.parse(raw)) ?? .string(raw)
        // A version written bare keeps its digits ("17.10" is not the number 17.1).
        if DeviceProperty(rawValue: String(words[0]))?.kind == .version, operand.stringValue == nil,
           operand.arrayValue == nil {
            operand = .string(raw)
        }
        try self.init(property: String(words[0]), op: String(words[1]), operand: operand, claim: claim)
    }

    /// Checks that the operator and operand suit the property.
    init(property name: String, op opName: String, operand: JSONValue, claim: String) throws(ServiceError) {
        guard let property = DeviceProperty(rawValue: name) else {
            throw ServiceError(.badRequest, "claim \(claim): unknown property \(name) (one of "
                                            + "\(DeviceProperty.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let op = ClaimOperator(rawValue: opName) else {
            throw ServiceError(.badRequest, "claim \(claim): unknown operator \(opName) (one of "
                                            + "\(ClaimOperator.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self.property = property
        self.op = op
        self.operand = operand
        let values: [JSONValue]
        if op == .in {
            guard let items = operand.arrayValue, !items.isEmpty else {
                throw ServiceError(.badRequest,
                                   "claim \(claim): in takes a non-empty JSON array, e.g. [\"iOS\",\"iPadOS\"]")
            }
            values = items
        } else {
            values = [operand]
        }
        if op.isOrdering && !(property.kind == .number || property.kind == .version) {
            throw ServiceError(.badRequest, "claim \(claim): \(op.rawValue) needs a number or version property; "
                                            + "\(name) takes eq, ne or in")
        }
        for v in values where !property.kind.accepts(v) {
            throw ServiceError(.badRequest,
                               "claim \(claim): \(name) compares with \(property.kind.expected), got \(v.jsonText)")
        }
    }
}

public enum ClaimOperator: String, Sendable, CaseIterable {
    case eq, ne, lt, le, gt, ge, `in`

    var isOrdering: Bool { self == .lt || self == .le || self == .gt || self == .ge }
}
