import AttestConfig
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// site.conf's operator console (issue #43, docs/console.md): where `@CONSOLE_DIR@` points for a
/// checkout and for an installed share directory, and the headers every answer carries.
@Suite("nginx templates: the console") struct NginxConsoleTests {
    static let site = NginxTemplateTests.site
    static let checkoutConsole = URL(fileURLWithPath: NginxTemplateTests.templates).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("console").path

    /// The text of `location /console/ { … }`.
    static var block: String {
        guard let start = site.range(of: "location /console/ {") else { return "" }
        let rest = site[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n    }\n")?.lowerBound ?? rest.endIndex)])
    }

    @Test("from a checkout, @CONSOLE_DIR@ is the checkout's console/")
    func checkoutDirectory() {
        let dir = NginxSite(templates: NginxTemplateTests.templates).consoleDirectory
        #expect(dir == Self.checkoutConsole, "\(dir)")
        #expect(FileManager.default.fileExists(atPath: dir + "/index.html"))
        #expect(FileManager.default.fileExists(atPath: dir + "/login.html"))
    }

    @Test("installed, @CONSOLE_DIR@ is PREFIX/share/attestedge/console beside the templates")
    func installedDirectory() throws {
        let dir = TemporaryDirectory()
        let share = dir.path + "/share/attestedge"
        try FileManager.default.createDirectory(atPath: share + "/nginx", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: share + "/console", withIntermediateDirectories: true)
        try "<!doctype html>".write(toFile: share + "/console/index.html", atomically: true, encoding: .utf8)
        let found = NginxSite(templates: share + "/nginx").consoleDirectory
        #expect(found.hasSuffix("/share/attestedge/console"), "\(found)")
        #expect(!found.contains(".."), "\(found)")
    }

    @Test("the rendered site aliases /console/ to the console directory")
    func rendered() throws {
        let dir = TemporaryDirectory()
        let data = DataDirectory(dir.path + "/data")
        try FileManager.default.createDirectory(atPath: data.nginxDirectory, withIntermediateDirectories: true)
        _ = try NginxSite(templates: NginxTemplateTests.templates)
            .render(data: data, configuration: Configuration(), user: "a a", startID: "ab", absentPools: [])
        let text = try String(contentsOfFile: data.nginxDirectory + "/site.conf", encoding: .utf8)
        #expect(text.contains("alias \(Self.checkoutConsole)/;"))
        #expect(!text.contains("@CONSOLE_DIR@"))
    }

    @Test("every /console/ answer: the CSP, no framing, no referrer, nosniff, no-cache, HSTS under TLS")
    func headers() {
        let csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        for line in ["add_header Content-Security-Policy \"\(csp)\" always;", "add_header X-Frame-Options DENY always;",
                     "add_header Referrer-Policy no-referrer always;", "add_header X-Content-Type-Options nosniff always;",
                     "add_header Cache-Control no-cache always;", "@TLS_HEADERS@", "alias @CONSOLE_DIR@/;"] {
            #expect(Self.block.contains(line), "\(line)")
        }
        // Modules are refused under nosniff unless served as JavaScript.
        #expect(Self.block.contains("text/javascript         js mjs;"))
        #expect(Self.site.contains("location = /console {\n        absolute_redirect off;\n        return 301 /console/;"))
    }
}
