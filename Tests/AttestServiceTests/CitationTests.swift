import Foundation
import Testing

/// Every citation resolves to a document in the repository: "docs/contract.md §n" in code,
/// tests and nginx/ names a section of docs/contract.md; every docs/… path they name exists;
/// every relative link of README.md and docs/ reaches a file (and a heading, when it names one).
@Suite struct CitationTests {
    /// Text files under the folders that hold code, tests and deployment files.
    static let cited: [(path: String, text: String)] = {
        var files = [(String, String)]()
        let manager = FileManager.default
        for folder in ["Sources", "Tests", "nginx", ".ci"] {
            let base = DocumentationTests.root.appendingPathComponent(folder)
            guard let walk = manager.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey]) else {
                continue
            }
            for case let url as URL in walk where !url.path.contains("/FuzzCorpus/") {
                guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true,
                      let text = try? String(contentsOf: url, encoding: .utf8) else { continue }
                files.append((folder + url.path.dropFirst(base.path.count), text))
            }
        }
        return files
    }()

    /// README.md and every markdown file under docs/.
    static let documents: [(path: String, text: String)] = {
        var files = [("README.md", (try? DocumentationTests.document("README.md")) ?? "")]
        let base = DocumentationTests.root.appendingPathComponent("docs")
        for case let url as URL in FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) ?? .init()
        where url.pathExtension == "md" {
            let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
            files.append(("docs" + url.path.dropFirst(base.path.count), text))
        }
        return files
    }()

    static func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { Range(match.range(at: $0), in: text).map { String(text[$0]) } ?? "" }
        }
    }

    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: DocumentationTests.root.appendingPathComponent(path).path)
    }

    @Test func everyContractCitationNamesASectionOfTheContract() throws {
        let contract = try DocumentationTests.document("docs/contract.md")
        let sections = Set(Self.matches(#"(?m)^## (\d+)\. "#, in: contract).map { $0[1] })
        #expect(sections == Set((1...8).map(String.init)),
                "docs/contract.md has sections 1 to 8: \(sections.sorted())")
        var citations = 0
        for (path, text) in Self.cited {
            let stale = ["SPEC" + " §", "SPEC" + " order"].filter(text.contains)
            #expect(stale.isEmpty, "\(path) cites \(stale), a document that is not in the repository")
            for run in Self.matches(#"contract\.md((?:(?:,|–|-|and|or|\s)*§\d+)+)"#, in: text) {
                for number in Self.matches(#"§(\d+)"#, in: run[1]).map({ $0[1] }) {
                    citations += 1
                    #expect(sections.contains(number),
                            "\(path) cites docs/contract.md §\(number), which has no such section")
                }
            }
        }
        #expect(citations >= 20, "the code and tests cite the contract (\(citations) citations found)")
    }

    @Test func everyDocumentTheCodeNamesExists() {
        for (path, text) in Self.cited + Self.documents {
            for match in Self.matches(#"(?<![\w./-])(docs/[\w./-]*\w\.md)"#, in: text) {
                #expect(Self.exists(match[1]), "\(path) names \(match[1]), which is not in the repository")
            }
        }
    }

    @Test func everyRelativeLinkOfTheDocumentsResolves() {
        for (path, text) in Self.documents {
            let folder = (path as NSString).deletingLastPathComponent
            for link in Self.matches(#"\]\(([^)\s#]*)(?:#([^)\s]*))?\)"#, in: text) {
                let (target, anchor) = (link[1], link[2])
                guard !target.contains(":") else { continue }  // https:, mailto:
                let file = target.isEmpty
                    ? path : ((folder as NSString).appendingPathComponent(target) as NSString).standardizingPath
                #expect(Self.exists(file), "\(path) links \(target), which is not in the repository")
                guard !anchor.isEmpty, file.hasSuffix(".md"), let linked = try? DocumentationTests.document(file) else {
                    continue
                }
                let headings = Self.matches(#"(?m)^#{1,6} (.+)$"#, in: linked).map { Self.anchor($0[1]) }
                #expect(headings.contains(anchor), "\(path) links \(file)#\(anchor), which has no such heading")
            }
        }
    }

    /// A heading's anchor as GitHub makes it: lower case, spaces to dashes, other punctuation dropped.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { c -> Character? in
            c == " " ? "-" : c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
        })
    }
}
