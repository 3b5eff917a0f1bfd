@testable import FastCGI
import Testing

@Suite("ServerOptions.parse") struct ServerOptionsTests {
    @Test("--socket alone gives the documented defaults")
    func defaults() throws {
        let (options, rest) = try ServerOptions.parse(["--socket", "/run/a.sock"])
        #expect(options.socketPath == "/run/a.sock")
        #expect(options.workers == 2)
        #expect(options.bodyLimit == 65536)
        #expect(options.backlog == 1024)
        #expect(options.socketMode == 0o660)
        #expect(options.shutdownGraceSeconds == 10)
        #expect(rest.isEmpty)
    }

    @Test("every flag, in both spellings, and the rest kept in order")
    func everyFlag() throws {
        let argv = ["attest-challenge", "--data", "/var/lib/x", "--socket=/s.sock", "--workers", "4",
                    "--body-limit=1024", "--verbose", "--socket-mode", "600", "--shutdown-grace", "3", "tail"]
        let (options, rest) = try ServerOptions.parse(argv)
        #expect(options.socketPath == "/s.sock")
        #expect(options.workers == 4)
        #expect(options.bodyLimit == 1024)
        #expect(options.socketMode == 0o600)
        #expect(options.shutdownGraceSeconds == 3)
        #expect(rest == ["attest-challenge", "--data", "/var/lib/x", "--verbose", "tail"])
    }

    @Test("socket mode accepts 0660 and 0o660")
    func octalSpellings() throws {
        #expect(try ServerOptions.parse(["--socket", "/s", "--socket-mode", "0660"]).0.socketMode == 0o660)
        #expect(try ServerOptions.parse(["--socket", "/s", "--socket-mode", "0o640"]).0.socketMode == 0o640)
    }

    @Test("a repeated flag takes its last value")
    func lastWins() throws {
        let (options, _) = try ServerOptions.parse(["--socket", "/a", "--workers", "3",
                                                    "--socket", "/b", "--workers", "1"])
        #expect(options.socketPath == "/b")
        #expect(options.workers == 1)
    }

    @Test("parsing stops at --, which stays in the rest")
    func doubleDash() throws {
        let (options, rest) = try ServerOptions.parse(["--socket", "/a", "--", "--workers", "9"])
        #expect(options.workers == 2)
        #expect(rest == ["--", "--workers", "9"])
    }

    @Test("--socket is required")
    func missingSocket() {
        let error = parseError(["--workers", "2"])
        #expect(error == FastCGIError(.missingOption, ""))
        #expect(error?.flag == "--socket")
        #expect(error?.description.hasPrefix("--socket: ") == true)
    }

    @Test("a flag without a value names that flag", arguments: [
        ["--socket"], ["--socket", "/a", "--workers"], ["--socket", "--workers", "2"],
    ])
    func missingValue(argv: [String]) {
        let error = parseError(argv)
        #expect(error == FastCGIError(.invalidOption, ""))
        #expect(error?.reason == "needs a value")
    }

    @Test("out-of-range or malformed values name the flag", arguments: [
        (["--workers", "0"], "--workers"), (["--workers", "65"], "--workers"), (["--workers", "two"], "--workers"),
        (["--body-limit", "-1"], "--body-limit"), (["--body-limit", "99999999999"], "--body-limit"),
        (["--socket-mode", "888"], "--socket-mode"), (["--socket-mode", "1777"], "--socket-mode"),
        (["--socket-mode", ""], "--socket-mode"), (["--socket-mode", "rw"], "--socket-mode"),
        (["--shutdown-grace", "-1"], "--shutdown-grace"), (["--shutdown-grace", "3601"], "--shutdown-grace"),
    ])
    func badValue(extra: [String], flag: String) {
        let error = parseError(["--socket", "/a"] + extra)
        #expect(error == FastCGIError(.invalidOption, ""), "\(extra)")
        #expect(error?.flag == flag, "\(extra)")
        #expect(error?.description.contains(extra[1]) == true || extra[1].isEmpty, "message quotes the bad value")
    }

    @Test("a socket path longer than sun_path is refused")
    func longPath() throws {
        let path = "/" + String(repeating: "s", count: ServerOptions.maxSocketPathBytes)
        let error = parseError(["--socket", path])
        #expect(error?.flag == "--socket")
        #expect(try ServerOptions.parse(["--socket", String(path.dropFirst())]).0.socketPath.utf8.count == 107)
    }

    @Test("validate checks values set in code, too")
    func validate() {
        var options = ServerOptions(socketPath: "/a")
        #expect(throws: Never.self) { try options.validate() }
        options.workers = 0
        #expect(throws: FastCGIError(.invalidOption, "")) { try options.validate() }
        options = ServerOptions(socketPath: "")
        #expect(throws: FastCGIError(.invalidOption, "")) { try options.validate() }
        options = ServerOptions(socketPath: "/a", shutdownGraceSeconds: -1)
        #expect(throws: FastCGIError(.invalidOption, "")) { try options.validate() }
    }

    private func parseError(_ argv: [String]) -> FastCGIError? {
        do {
            _ = try ServerOptions.parse(argv)
            return nil
        } catch {
            return error
        }
    }
}
