import AttestCore
import AttestStore

/// Checking a flag value (JSON text) against the flag's type, and the form it is stored in.
///
/// | type | value |
/// |---|---|
/// | `bool` | `true` or `false` |
/// | `int` | an integral JSON number within Int64, stored without a fraction (`2.0` → `2`) |
/// | `double` | any JSON number |
/// | `string` | a JSON string |
/// | `json` | a JSON object or array |
///
/// At most `maximumBytes` of compact JSON. The stored text is the compact form, so the answer
/// splices it as is (one line: the JSON writer escapes newlines).
public enum FeatureFlagValueType {
    public static let maximumBytes = 1_024

    /// The compact JSON text of `text` as a value of `type`.
    /// - Throws: `bad_request` naming the type and the problem.
    public static func check(_ text: String, type: FeatureFlagType) throws(ServiceError) -> String {
        guard text.utf8.count <= 64 * maximumBytes, let value = try? JSONParser.parse(text) else {
            throw ServiceError(.badRequest, "the value must be JSON (a \(type.rawValue): \(example(type))), "
                                            + "got \(String(text.prefix(80)).debugDescription)")
        }
        return try check(value, type: type)
    }

    /// As above, from a parsed value.
    public static func check(_ value: JSONValue, type: FeatureFlagType) throws(ServiceError) -> String {
        let stored: JSONValue?
        switch (type, value) {
        case (.bool, .bool): stored = value
        case (.int, .int): stored = value
        case (.int, .double(let d)) where d.rounded() == d && abs(d) < 9.2e18: stored = .int(Int64(d))
        case (.double, .int), (.double, .double): stored = value
        case (.string, .string): stored = value
        case (.json, .object), (.json, .array): stored = value
        default: stored = nil
        }
        guard let stored else {
            throw ServiceError(.badRequest, "a flag of type \(type.rawValue) takes \(example(type)), "
                                            + "got \(String(value.jsonText.prefix(80)))")
        }
        let text = stored.jsonText
        guard text.utf8.count <= maximumBytes else {
            throw ServiceError(.badRequest, "the value's JSON is \(text.utf8.count) bytes; at most \(maximumBytes)")
        }
        return text
    }

    static func example(_ type: FeatureFlagType) -> String {
        switch type {
        case .bool: return "true or false"
        case .int: return "a whole number such as 42"
        case .double: return "a number such as 0.25"
        case .string: return "a JSON string such as \"blue\""
        case .json: return "a JSON object or array"
        }
    }
}
