import AttestCore
import AttestStore

/// Per-app custom claims (SPEC §6), stored on the app as an ordered JSON array:
///
/// ```
/// [ {"type": "static", "key": "user_tier", "value": <any JSON>},
///   {"type": "conditional", "key": "beta", "property": "environment" | "platform" | "deviceModel"
///      | "osVersion" | "appVersion" | "riskCategory", "equals": "<text>", "value": <JSON>} ]
/// ```
/// Evaluated in order (a later claim with the same key replaces an earlier one). Tier limits:
/// free 1 claim (static only), pro 5, business 10, enterprise 20.
public enum CustomClaims {
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Checks a claims definition against the syntax and the tier's limits.
    public static func validate(_ json: String, tier: Tier) throws(Problem) {
        let items = try parse(json)
        guard items.count <= tier.customClaimLimit else {
            throw Problem(message: "the \(tier.rawValue) tier allows \(tier.customClaimLimit) custom claim(s), got \(items.count)")
        }
        for item in items {
            let type = item["type"]?.stringValue
            guard let key = item["key"]?.stringValue, !key.isEmpty, item["value"] != nil else {
                throw Problem(message: "each claim needs a non-empty \"key\" and a \"value\"")
            }
            switch type {
            case "static": break
            case "conditional":
                guard tier != .free else { throw Problem(message: "conditional claims need the pro tier or above (\(key))") }
                guard let p = item["property"]?.stringValue, properties.contains(p), item["equals"]?.stringValue != nil else {
                    throw Problem(message: "conditional claim \(key) needs \"property\" (one of \(properties.joined(separator: ", "))) and \"equals\"")
                }
            default:
                throw Problem(message: "claim \(key): type must be \"static\" or \"conditional\"")
            }
        }
    }

    static let properties = ["environment", "platform", "deviceModel", "osVersion", "appVersion", "riskCategory"]

    static func parse(_ json: String) throws(Problem) -> [JSONValue] {
        guard !json.isEmpty else { return [] }
        do {
            guard let items = try JSONParser.parse(json).arrayValue else { throw Problem(message: "custom claims must be a JSON array") }
            return items
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(message: "custom claims are not valid JSON")
        }
    }

    /// The claims for one device, in definition order.
    public static func evaluate(_ json: String, device: DeviceRecord, risk: RiskAssessment) -> [(String, JSONValue)] {
        guard let items = try? parse(json) else { return [] }
        var out = [(String, JSONValue)]()
        func property(_ name: String) -> String {
            switch name {
            case "environment": return device.environment.rawValue
            case "platform": return device.metadata.platform
            case "deviceModel": return device.metadata.deviceModel
            case "osVersion": return device.metadata.osVersion
            case "appVersion": return device.metadata.appVersion
            case "riskCategory": return risk.category
            default: return ""
            }
        }
        for item in items {
            guard let key = item["key"]?.stringValue, let value = item["value"] else { continue }
            if item["type"]?.stringValue == "conditional" {
                guard let p = item["property"]?.stringValue, let equals = item["equals"]?.stringValue, property(p) == equals else { continue }
            }
            out.removeAll { $0.0 == key }
            out.append((key, value))
        }
        return out
    }

    /// The response's `customClaims`: strings as they are, anything else as JSON text.
    public static func flattened(_ claims: [(String, JSONValue)]) -> JSONValue {
        .object(claims.map { ($0.0, .string($0.1.stringValue ?? $0.1.jsonText)) })
    }
}
