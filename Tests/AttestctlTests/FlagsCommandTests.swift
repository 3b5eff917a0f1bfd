import Foundation
import SupervisorTestSupport
import Testing

/// `attestctl flags` and `attestctl notes` end to end: the built binary on a fresh data
/// directory, its tables, its --json, its exit codes and its error messages.
@Suite("FlagsCommand") struct FlagsCommandTests {
    /// The attestctl built beside this test binary.
    static let attestctl = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("attestctl").path

    final class CLI {
        let directory: TemporaryDirectory
        let data: String

        init() throws {
            directory = TemporaryDirectory()
            data = directory.path + "/data"
            for args in [["init"], ["org", "add", "acme", "--tier", "pro"], ["org", "add", "tiny"],
                         ["app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app"],
                         ["app", "add", "--org", "tiny", "--team", "FREEE12345", "--bundle", "com.free.app"]] {
                let (status, _, err) = try run(args)
                guard status == 0 else { throw CocoaError(.featureUnsupported, userInfo: ["why": err]) }
            }
        }

        /// (exit status, stdout, stderr).
        func run(_ args: [String]) throws -> (Int32, String, String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: FlagsCommandTests.attestctl)
            process.arguments = args + ["--data", data]
            var environment = ProcessInfo.processInfo.environment
            environment["ATTEST_EDGE_DATA"] = nil
            process.environment = environment
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: stdout, as: UTF8.self),
                    String(decoding: stderr, as: UTF8.self))
        }

        func ok(_ args: [String]) throws -> String {
            let (status, out, err) = try run(args)
            #expect(status == 0, "attestctl \(args.joined(separator: " ")): \(err)")
            return out
        }
    }

    static let app = "ABCDE12345.com.example.app"

    @Test("flags: add, rule, rollout, override, env, list, show, test and remove round trip")
    func roundTrip() throws {
        let cli = try CLI()
        let a = ["--app", Self.app]
        _ = try cli.ok(["flags", "add"] + a + ["--key", "beta", "--type", "bool", "--value", "false",
                                                "--description", "beta features"])
        _ = try cli.ok(["flags", "rule", "add"] + a + ["--key", "beta", "--value", "true", "--when", "riskScore lte 20",
                                                        "--when", "app_version gte 2.1", "--name", "trusted"])
        _ = try cli.ok(["flags", "add"] + a + ["--key", "color", "--type", "string", "--value", #""blue""#])
        _ = try cli.ok(["flags", "rollout"] + a + ["--key", "color", "--percent", "30", "--value", #""green""#])
        _ = try cli.ok(["flags", "env", "add"] + a + ["staging"])
        _ = try cli.ok(["flags", "set"] + a + ["--key", "color", "--value", #""red""#, "--env", "staging"])
        _ = try cli.ok(["flags", "override", "set"] + a + ["--key", "color", "--sdk-device-id", "qa-1",
                                                            "--value", #""pink""#, "--note", "QA"])
        let table = try cli.ok(["flags", "list"] + a)
        #expect(table.contains("beta") && table.contains("30% → \"green\"") && table.contains("beta features"),
                "\(table)")
        let json = try JSONSerialization.jsonObject(with: Data(try cli.ok(["flags", "show"] + a + ["--key", "beta",
                                                                                                   "--json"]).utf8))
        let flag = try #require(json as? [String: Any])
        let rules = try #require(flag["rules"] as? [[String: Any]])
        #expect(flag["type"] as? String == "bool" && rules.count == 1 && rules[0]["name"] as? String == "trusted")
        #expect((rules[0]["conditions"] as? [[String: Any]])?.map { $0["attribute"] as? String }
                == ["riskScore", "app_version"])
        let envs = try cli.ok(["flags", "env", "list"] + a)
        #expect(envs.contains("production") && envs.contains("staging"))
        let overrides = try cli.ok(["flags", "override", "list"] + a)
        #expect(overrides.contains("sdk:qa-1") && overrides.contains("QA"))
        let explained = try cli.ok(["flags", "test"] + a + ["--profile", #"{"riskScore":10}"#,
                                                            "--header", "X-App-Version: 2.2", "--key", "beta"])
        #expect(explained.contains("beta = true")
                && explained.contains("rule 1 'trusted' matched: riskScore 10 lte 20: yes; app_version \"2.2\" gte "
                                      + "\"2.1\": yes"), "\(explained)")
        let asQA = try cli.ok(["flags", "test"] + a + ["--api-key", "--header", "X-Device-ID: qa-1", "--json"])
        // The SDK's answer for this caller: the sdk: override wins, beta's rule has no server values.
        let expected = "\"answer\": {\n    \"flags\": {\n      \"beta\": false,\n      \"color\": \"pink\"\n    }"
        #expect(asQA.contains(expected),
                "\(asQA)")
        _ = try cli.ok(["flags", "rule", "remove"] + a + ["--key", "beta", "--index", "1"])
        _ = try cli.ok(["flags", "override", "remove"] + a + ["--key", "color", "--sdk-device-id", "qa-1"])
        _ = try cli.ok(["flags", "remove"] + a + ["--key", "color"])
        let after = try JSONSerialization.jsonObject(with: Data(try cli.ok(["flags", "list"] + a + ["--json"]).utf8))
        #expect((after as? [[String: Any]])?.map { $0["key"] as? String } == ["beta"])
    }

    @Test("flags: clear errors, exit status 1, tier limits named")
    func errors() throws {
        let cli = try CLI()
        let a = ["--app", Self.app]
        let cases: [([String], String)] = [
            (["flags", "add"] + a + ["--key", "n", "--type", "int", "--value", "2.5"], "whole number"),
            (["flags", "add", "--app", "FREEE12345.com.free.app", "--key", "n", "--type", "int", "--value", "2"],
             "The free tier allows on/off (bool) flags only"),
            (["flags", "env", "add", "--app", "FREEE12345.com.free.app", "qa"], "The free tier allows 1 environments"),
            (["flags", "set"] + a + ["--key", "absent", "--value", "true"], "No flag absent"),
            (["flags", "add", "--app", "NOPE.app", "--key", "k", "--type", "bool", "--value", "true"],
             "No app NOPE.app"),
            (["flags", "set"] + a + ["--key", "absent", "--value", "true", "--env", "qa"], "No environment qa"),
        ]
        for (args, message) in cases {
            let (status, _, err) = try cli.run(args)
            #expect(status == 1 && err.contains(message), "\(args.joined(separator: " ")): \(status) \(err)")
        }
        _ = try cli.ok(["flags", "add"] + a + ["--key", "b", "--type", "bool", "--value", "true"])
        let (status, _, err) = try cli.run(["flags", "rule", "add"] + a + ["--key", "b", "--value", "true",
                                                                          "--when", "riskScore contains 2"])
        #expect(status == 1 && err.contains("riskScore takes eq, neq, gt, gte, lt, lte, in, not_in, not contains"))
        let (usage, _, usageErr) = try cli.run(["flags", "rule", "add"] + a + ["--key", "b", "--value", "true"])
        #expect(usage == 2 && usageErr.contains("--when"))
    }

    @Test("notes: add, list (table and JSON), a second note for the version refused, remove")
    func notes() throws {
        let cli = try CLI()
        let a = ["--app", Self.app]
        let id = try cli.ok(["notes", "add"] + a + ["--version", "2.1", "--title", "Dark mode", "--body", "**yes**"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id.count == 36 && id == id.uppercased())
        let bodyFile = cli.directory.path + "/body.md"
        try "# Later\n".write(toFile: bodyFile, atomically: true, encoding: .utf8)
        _ = try cli.ok(["notes", "add"] + a + ["--version", "3.0", "--title", "Later", "--body-file", bodyFile,
                                               "--publish-at", "2099-01-01T00:00:00Z"])
        let (dup, _, dupErr) = try cli.run(["notes", "add"] + a + ["--version", "2.1.0", "--title", "x", "--body", "y"])
        #expect(dup == 1 && dupErr.contains("has a note for version 2.1 already"))
        let table = try cli.ok(["notes", "list"] + a)
        #expect(table.contains("scheduled") && table.contains("published") && table.contains(id))
        let listed = try cli.ok(["notes", "list"] + a + ["--json"])
        let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]])
        #expect(list.map { $0["version"] as? String } == ["3.0", "2.1"])
        #expect(list.last?["body"] as? String == "**yes**" && list.first?["body"] as? String == "# Later\n")
        _ = try cli.ok(["notes", "remove"] + a + [id.lowercased()])
        #expect(try !cli.ok(["notes", "list"] + a).contains(id))
    }
}
