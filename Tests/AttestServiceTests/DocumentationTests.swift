@testable import AttestConfig
import AttestCore
import AttestService
import Foundation
import Testing

/// The README documents what the code does: every configuration key with its default, and
/// every error code the service can answer.
@Suite struct DocumentationTests {
    static let readme: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    @Test func everyConfigurationKeyIsDocumentedWithItsDefault() {
        let defaults = Configuration().json
        for key in ConfigurationKey.all {
            var node: AttestCore.JSONValue? = defaults
            for part in key.name.split(separator: ".") { node = node?[String(part)] }
            let value = node.map { $0.stringValue.map { "`\($0)`" } ?? $0.jsonText.replacingOccurrences(of: "[]", with: "`[]`") } ?? "?"
            let shown = value == "true" || value == "false" ? "`\(value)`" : value
            #expect(Self.readme.contains("| `\(key.name)` | \(shown) |"), "README row for \(key.name) with default \(shown)")
        }
    }

    @Test func everyErrorCodeIsDocumented() {
        let internalOnly: Set<ServiceError.Code> = [.internalError, .unauthorized, .quotaExceeded]
        for code in ServiceError.Code.allCases where !internalOnly.contains(code) {
            #expect(Self.readme.contains("`\(code.rawValue)`"), "README mentions \(code.rawValue)")
        }
    }
}
