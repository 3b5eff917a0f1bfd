import AttestConfig
import CLISupport
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// The repository's nginx templates as `attestctl serve` renders them.
@Suite("nginx templates") struct NginxTemplateTests {
    static let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("nginx/conf").path
    static let site = (try? String(contentsOfFile: templates + "/site.conf", encoding: .utf8)) ?? ""

    /// Every status nginx itself can answer with (ngx_http_special_response.c, HTTP/1.x).
    static let nginxStatuses = [400, 403, 404, 405, 408, 411, 413, 414, 416, 429, 494, 495, 496, 497,
                                500, 501, 502, 503, 504, 505, 507]

    /// Review of issue 39: serve checked `--listen` against config.json's metricsListen before
    /// `--metrics-listen` replaced it, so moving both at once was refused. Both are applied, then
    /// checked once; the run stops right after, at `--workers 0`.
    @Test("serve --listen and --metrics-listen are checked together")
    func serveChecksBothListenFlagsTogether() throws {
        let dir = TemporaryDirectory()
        try "{}".write(toFile: dir.path + "/config.json", atomically: true, encoding: .utf8)
        func refusal(_ flags: [String]) -> String {
            do {
                let args = try Arguments(["--data", dir.path, "--workers", "0"] + flags,
                                         valued: ["data", "workers", "listen", "metrics-listen"])
                _ = try Serve(args).run()
                return "ran"
            } catch { return "\(error)" }
        }
        let moved = refusal(["--listen", "127.0.0.1:9469", "--metrics-listen", "127.0.0.1:9470"])
        #expect(!moved.contains("metricsListen") && moved.contains("--workers must be"), "\(moved)")
        let clash = refusal(["--listen", "127.0.0.1:9469"])
        #expect(clash.contains("server.metricsListen must be another socket than server.listen"), "\(clash)")
        let spelled = refusal(["--listen", "127.0.0.1:9470", "--metrics-listen", "127.0.0.1:09470"])
        #expect(spelled.contains("server.metricsListen must be another socket"), "\(spelled)")
    }

    /// Item 15: a named location as an error page fails for errors found while nginx reads the
    /// request line ("empty URI in redirect to named location"), which became a 500 HTML page.
    @Test("every error page is a URI, never a named location")
    func errorPagesAreURIs() {
        let lines = Self.site.split(separator: "\n")
            .filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("error_page") }
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(!line.contains("@"), "\(line) redirects to a named location")
        }
    }

    @Test("every status nginx can produce has a JSON envelope with a status of the same class",
          arguments: nginxStatuses)
    func everyStatusHasAnEnvelope(status: Int) throws {
        let target = "/.attestedge/error/\(status)"
        #expect(Self.site.contains("error_page \(status) \(target);"), "error_page for \(status)")
        let start = try #require(Self.site.range(of: "location = \(target) {"), "location \(target)")
        let rest = Self.site[start.upperBound...]
        let block = rest[..<(rest.range(of: "\n    }\n")?.lowerBound ?? rest.endIndex)]
        #expect(block.contains("internal;"), "\(target) is internal")
        #expect(block.contains("default_type application/json;"), "\(target) is JSON")
        let returned = try #require(block.firstMatch(of: /return (\d{3}) '(\{.*\})\\n';/), "\(target) returns a body")
        let code = Int(returned.1)!
        #expect(code / 100 == status / 100 || (status >= 494 && status <= 497 && code == 400),
                "\(status) answers \(code): a client error stays a 4xx")
        let body = String(returned.2).replacingOccurrences(of: "$request_id", with: "0123456789abcdef0123456789abcdef")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: String],
                                "\(target) body is a JSON object")
        #expect(Set(json.keys) == ["error", "code", "requestId", "reason"], "envelope keys of \(status)")
        #expect(json["reason"] == json["error"], "reason repeats error for \(status)")
    }

    /// Items 11 and 14: the rendered nginx.conf names the service user and answers the start id
    /// on a server only a request naming that id reaches.
    @Test("render: the user line, and a readiness server answering this start's id")
    func rendersUserAndStartID() throws {
        let dir = TemporaryDirectory()
        let data = DataDirectory(dir.path + "/data")
        for sub in [data.path, data.nginxDirectory] { mkdir(sub, 0o755) }
        var config = Configuration()
        config.listen = "127.0.0.1:9999"
        let id = NginxSite.newStartID()
        let path = try NginxSite(templates: Self.templates).render(data: data, configuration: config,
                                                                   user: "attestedge attestedge", startID: id,
                                                                   absentPools: ["mad", "webhooks"])
        let conf = try String(contentsOfFile: path, encoding: .utf8)
        #expect(conf.contains("\nuser attestedge attestedge;\n"))
        #expect(conf.contains("server_name ready-\(id).attestedge.invalid;"))
        #expect(conf.contains("return 200 '\(id)';"))
        #expect(id.count == 32 && id != NginxSite.newStartID(), "a fresh 128-bit id per start")
    }

    @Test("a data directory whose path nginx would split is refused with what to do")
    func pathsNginxCannotTakeAreRefused() throws {
        let dir = TemporaryDirectory()
        let data = DataDirectory(dir.path + "/My Projects/data")
        for sub in [dir.path + "/My Projects", data.path, data.nginxDirectory] { mkdir(sub, 0o755) }
        let failure = #expect(throws: SupervisorError.self) {
            try NginxSite(templates: Self.templates).render(data: data, configuration: Configuration(), user: "a a",
                                                            startID: NginxSite.newStartID(), absentPools: [])
        }
        #expect(failure?.description.contains("--data") == true, "\(failure.map { "\($0)" } ?? "")")
    }

    /// Issue 37, item 1: root renders these files from config.json, which the service user can
    /// write. Each placeholder is given hostile values in turn: rendering refuses every one.
    static let hostile = ["127.0.0.1:18080; } log_format p escape=none '$http_x'; server { listen 127.0.0.1:18081; access_log /etc/cron.d/x p; } server { listen 127.0.0.1:18082",
                          "127.0.0.1:8080;", "127.0.0.1:8080 }", "127.0.0.1:8080\nuser root", "a'b:80", "a\"b:80",
                          "$x:80", "127.0.0.1:8080 #"]

    @Test("render: a hostile value for any placeholder is refused, never escaped or written")
    func hostileValuesAreRefused() throws {
        let dir = TemporaryDirectory()
        let site = NginxSite(templates: Self.templates)
        func attempt(listen: String = "127.0.0.1:9999", user: String = "attestedge attestedge",
                     startID: String = NginxSite.newStartID(), data: String = dir.path + "/data",
                     runDirectory: String = "/run/attestedge") -> (any Error)? {
            let data = DataDirectory(data)
            for sub in [data.path, data.nginxDirectory, dir.path + "/host"] { mkdir(sub, 0o755) }
            var config = Configuration()
            config.listen = listen
            do {
                _ = try site.render(data: data, configuration: config, user: user, startID: startID, absentPools: [])
                try site.renderForHost(data: data, configuration: config, runDirectory: runDirectory,
                                       into: dir.path + "/host")
                return nil
            } catch { return error }
        }
        #expect(attempt() == nil, "the baseline renders")
        for value in Self.hostile {
            #expect(attempt(listen: value) is SupervisorError, "server.listen \(value.debugDescription)")
            #expect("\(attempt(listen: value).map { "\($0)" } ?? "")".contains("server.listen"),
                    "the refusal names the key")
            #expect(attempt(user: value) is SupervisorError, "user \(value.debugDescription)")
            #expect(attempt(startID: value) is SupervisorError, "start id \(value.debugDescription)")
            #expect(attempt(runDirectory: "/run/" + value) is SupervisorError,
                    "run directory \(value.debugDescription)")
        }
        for path in ["/x;", "/x{", "/x}", "/x'", "/x\"", "/x$y", "/x\n", "/x y"] {
            #expect(attempt(data: dir.path + path) is SupervisorError, "data directory \(path.debugDescription)")
        }
    }

    /// Nothing nginx reads as syntax comes from a value: with every value valid (the richest
    /// listen form included), each rendered file has exactly the template's `;`, `{`, `}`,
    /// quotes, `$` and newlines.
    @Test("render: the syntax characters of every rendered file are the template's own")
    func renderedSyntaxIsTheTemplates() throws {
        let dir = TemporaryDirectory()
        let data = DataDirectory(dir.path + "/data")
        for sub in [data.path, data.nginxDirectory] { mkdir(sub, 0o755) }
        var config = Configuration()
        config.listen = "[::1]:9999 reuseport"
        config.challengePerIPPerSecond = 1_000_000
        config.challengeBurst = 1_000_000
        _ = try NginxSite(templates: Self.templates).render(data: data, configuration: config,
                                                            user: "attestedge www-data",
                                                           startID: NginxSite.newStartID(), absentPools: [])
        func syntax(_ text: String) -> [Character: Int] {
            text.reduce(into: [:]) { counts, c in if ";{}'\"$\n\\#".contains(c) { counts[c, default: 0] += 1 } }
        }
        for file in NginxSite.files {
            let template = try String(contentsOfFile: Self.templates + "/" + file, encoding: .utf8)
            let rendered = try String(contentsOfFile: data.nginxDirectory + "/" + file, encoding: .utf8)
            #expect(syntax(rendered) == syntax(template), "\(file): syntax characters came from a value")
        }
        let conf = try String(contentsOfFile: data.nginxDirectory + "/nginx.conf", encoding: .utf8)
        let siteConf = try String(contentsOfFile: data.nginxDirectory + "/site.conf", encoding: .utf8)
        #expect(siteConf.contains("listen [::1]:9999 reuseport;"))
        #expect(conf.contains("listen [::1]:9999;") && conf.firstMatch(of: /\n\s*listen [^\n]*reuseport/) == nil,
                "reuseport once per address: site.conf only")
    }
}
