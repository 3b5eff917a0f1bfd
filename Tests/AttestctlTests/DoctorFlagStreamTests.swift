import Foundation
import SupervisorTestSupport
import Testing

/// `attestctl doctor`'s flag stream checks, on the built binary: the rendered nginx.conf must
/// load nchan, a low `worker_connections` is a warning, and a publisher socket that does not
/// accept is a problem. (On a running stack, nginx/e2e/ops.py shows doctor healthy: the real
/// publisher answers nchan's status.)
@Suite struct DoctorFlagStreamTests {
    /// The shipped template's lines that matter here, rendered.
    static let loads = "load_module /usr/lib/nginx/modules/ngx_nchan_module.so;\n"

    /// (exit status, stdout, stderr) of the attestctl built beside this test binary.
    static func attestctl(_ args: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: FlagsCommandTests.attestctl)
        process.arguments = args
        process.environment = ProcessInfo.processInfo.environment.filter { $0.key != "ATTEST_EDGE_DATA" }
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

    /// doctor --json's findings on a fresh data directory whose nginx.conf is `conf`, with no
    /// pool or publisher socket in `--run`: (problem, warning) pairs.
    static func findings(conf: String) throws -> [(problem: String, warning: Bool)] {
        let directory = TemporaryDirectory()
        let data = directory.path + "/data", run = directory.path + "/run"
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        let (status, _, err) = try Self.attestctl(["init", "--data", data])
        #expect(status == 0, "\(err)")
        try FileManager.default.createDirectory(atPath: data + "/nginx", withIntermediateDirectories: true)
        try conf.write(toFile: data + "/nginx/nginx.conf", atomically: true, encoding: .utf8)
        let (_, out, _) = try Self.attestctl(["doctor", "--json", "--data", data, "--run", run])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        return (json["findings"] as? [[String: Any]] ?? []).map {
            ($0["problem"] as? String ?? "", $0["warning"] as? Bool ?? false)
        }
    }

    @Test func aConfThatDoesNotLoadNchanIsAProblem() throws {
        let without = try Self.findings(conf: "# load_module /usr/lib/nginx/modules/ngx_nchan_module.so;\n"
                                            + "events {\n    worker_connections 16384;\n}\nhttp {}\n")
        #expect(without.contains { $0.problem.contains("does not load nchan") && !$0.warning }, "\(without)")
        let with = try Self.findings(conf: Self.loads + "events {\n    worker_connections 16384;\n}\nhttp {}\n")
        #expect(!with.contains { $0.problem.contains("nchan") && $0.problem.contains("nginx.conf") }, "\(with)")
        #expect(!with.contains { $0.problem.contains("worker_connections") }, "\(with)")
    }

    @Test func fewWorkerConnectionsIsAWarning() throws {
        for conf in [Self.loads + "events { worker_connections 1024; }\nhttp {}\n", Self.loads + "events {}\n"] {
            let found = try Self.findings(conf: conf)
            let warning = found.first { $0.problem.contains("worker_connections") }
            #expect(warning?.warning == true, "\(found)")
            #expect(warning?.problem.contains(conf.contains("1024") ? "1024" : "512") == true, "nginx's default")
        }
    }

    @Test func aPublisherThatDoesNotAcceptIsAProblem() throws {
        let found = try Self.findings(conf: Self.loads + "events { worker_connections 16384; }\nhttp {}\n")
        #expect(found.contains { $0.problem.contains("flag stream publisher does not accept") && !$0.warning },
                "\(found)")
    }
}
