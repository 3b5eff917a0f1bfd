import Foundation
import Testing

/// Package.swift declares every module each target imports. SwiftPM rebuilds a target when a
/// declared dependency changes; a module imported only because another dependency brings it
/// along is not watched, so a change to the layout of its types (a private stored property
/// added) can leave the importing target compiled against the old size. That happened here:
/// the service tests imported FastCGI without declaring it and crashed after an incremental
/// build; a clean build passed.
@Suite struct PackageManifestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each target's name and declared dependencies, read from Package.swift.
    static func targets() throws -> [(name: String, dependencies: Set<String>)] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = #/\.(target|executableTarget|testTarget)\(name: "([^"]+)"(, dependencies: \[([^\]]*)\])?/#
        return manifest.matches(of: target).map { match in
            let listed = match.output.4.map { String($0) } ?? ""
            return (String(match.output.2), Set(listed.matches(of: #/"([^"]+)"/#).map { String($0.output.1) }))
        }
    }

    /// The modules a target's sources import (`import X`, `@testable import X`).
    static func imports(of target: String) throws -> Set<String> {
        let tests = root.appendingPathComponent("Tests/" + target)
        let directory = FileManager.default.fileExists(atPath: tests.path)
            ? tests : root.appendingPathComponent("Sources/" + target)
        var found = Set<String>()
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let start = line.drop { $0 == " " }
                guard start.hasPrefix("import ") || start.hasPrefix("@testable ") else { continue }
                if let match = line.wholeMatch(of: #/\s*(@testable\s+)?import\s+(\w+).*/#) {
                    found.insert(String(match.output.2))
                }
            }
        }
        return found
    }

    @Test func everyImportedModuleOfThisPackageIsADeclaredDependency() throws {
        let targets = try Self.targets()
        #expect(targets.count > 20, "read the targets of Package.swift")
        let module = { (name: String) in name.replacingOccurrences(of: "-", with: "_") }
        let systemLibraries = ["COpenSSL", "CLMDB", "CFastCGI", "CCurl", "CPostgres", "CMetrics"]
        let ours = Set(targets.map { module($0.name) } + systemLibraries)
        for target in targets {
            let imported = try Self.imports(of: target.name).intersection(ours)
            let undeclared = imported.subtracting(target.dependencies.map(module)).subtracting([module(target.name)])
            #expect(undeclared.isEmpty,
                    "\(target.name) imports \(undeclared.sorted()) without listing them in Package.swift")
        }
    }

    @Test func theCheckSeesImports() throws {
        // The service tests import the service, FastCGI and the store: a reader that found
        // nothing would pass the test above without checking anything.
        #expect(try Self.imports(of: "AttestServiceTests").isSuperset(of: ["AttestService", "FastCGI", "AttestStore"]))
        #expect(try Self.targets().first { $0.name == "AttestServiceTests" }?.dependencies.contains("FastCGI") == true)
    }
}
