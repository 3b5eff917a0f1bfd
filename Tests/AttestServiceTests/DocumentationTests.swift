@testable import AttestConfig
import AttestCore
import AttestService
import Foundation
import Testing

/// The documents say what the code does: docs/configuration.md is the rendering of the keys in
/// code, with every key's default; docs/api.md names every error code the service can answer.
@Suite struct DocumentationTests {
    /// The repository's root directory.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A document of the repository, by its path from the root.
    static func document(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func theConfigurationReferenceIsTheRenderingOfTheKeys() throws {
        let file = try Self.document("docs/configuration.md")
        let rendered = ConfigurationReference.markdown()
        let firstDifference = zip(file.split(separator: "\n", omittingEmptySubsequences: false),
                                  rendered.split(separator: "\n", omittingEmptySubsequences: false))
            .enumerated().first { $0.element.0 != $0.element.1 }
        #expect(file == rendered, """
            docs/configuration.md differs from ConfigurationKey.all's rendering \
            (first at line \(firstDifference.map { "\($0.offset + 1): \($0.element.0)" } ?? "past the end")); \
            regenerate it: \(ConfigurationReference.regenerate)
            """)
    }

    @Test func everyConfigurationKeyIsDocumentedWithItsDefault() throws {
        let reference = try Self.document("docs/configuration.md")
        let defaults = Configuration().json
        for key in ConfigurationKey.all {
            var node: AttestCore.JSONValue? = defaults
            for part in key.name.split(separator: ".") { node = node?[String(part)] }
            let value = node.map {
                $0.stringValue.map { "`\($0)`" } ?? $0.jsonText.replacingOccurrences(of: "[]", with: "`[]`")
            } ?? "?"
            let shown = value == "true" || value == "false" ? "`\(value)`" : value
            #expect(reference.contains("| `\(key.name)` | \(shown) |"),
                    "docs/configuration.md row for \(key.name) with default \(shown)")
        }
    }

    @Test func everyErrorCodeIsDocumented() throws {
        let api = try Self.document("docs/api.md")
        let internalOnly: Set<ServiceError.Code> = [.internalError, .unauthorized, .quotaExceeded]
        for code in ServiceError.Code.allCases where !internalOnly.contains(code) {
            #expect(api.contains("`\(code.rawValue)`"), "docs/api.md mentions \(code.rawValue)")
        }
    }

    /// The README is the newcomer's page; the reference lives in docs/.
    @Test func theReadmeStaysAnIntroduction() throws {
        let lines = try Self.document("README.md").split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 250, "README.md has \(lines) lines: move reference material into docs/ and link it")
    }
}
